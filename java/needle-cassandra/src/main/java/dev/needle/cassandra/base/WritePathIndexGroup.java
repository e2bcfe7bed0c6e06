package dev.needle.cassandra.base;

import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.SingletonIndexGroup;
import org.apache.cassandra.index.transactions.IndexTransaction;

/**
 * The group of one of Needle's custom indexes, which take part in the write path only. An index
 * group that handles compaction makes Cassandra merge every compacted partition row by row in
 * order and build, for each merged row, the difference from each version it replaced (for index
 * garbage collection); one that handles cleanup gets every partition a cleanup removes. Needle's
 * indexes return no indexer for either (they follow SSTable swaps through the tracker's
 * notifications instead), so they say so, as SAI's group does, and a table with a Needle index
 * compacts as a table without one.
 */
public class WritePathIndexGroup extends SingletonIndexGroup {
    public WritePathIndexGroup(Index index) {
        super(index);
    }

    @Override
    public boolean handles(IndexTransaction.Type type) {
        return type == IndexTransaction.Type.UPDATE;
    }
}
