package dev.needle.cassandra.storage;

import java.nio.ByteBuffer;
import java.util.function.Function;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.Unfiltered;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.SSTableFlushObserver;

/**
 * Collects the exact key set of an SSTable while Cassandra writes it (flush, compaction,
 * streaming): per partition, whether it holds live-looking data, and its partition deletion as
 * far as the writer's source tells (an observer sees rows, not the partition deletion itself).
 *
 * <p>Nothing here may fail the write: an error disables the observer, and the SSTable is scanned
 * once it is live instead.
 */
final class KeySetObserver implements SSTableFlushObserver {
    private final StorageFilter filter;
    private final Descriptor descriptor;
    private final Function<ByteBuffer, Tombstone> tombstones;
    private final boolean tombstonesComplete;
    private final long nowInSec;
    /** The SSTable's data did not pass this node's write path: its live keys go to the node filter as they are written. */
    private final boolean reportArrivals;

    private final SSTableKeysBuilder builder = new SSTableKeysBuilder();
    private Token token; // of the partition being written, null between partitions
    private long hash;
    private long shadowedUpTo;
    private boolean live;
    private boolean failed;
    private boolean completed;

    /**
     * @param tombstones the partition deletion the SSTable holds for a key, as far as known (never
     *                   newer than the real one: a missing or older deletion only hides less)
     * @param tombstonesComplete whether {@code tombstones} knows every partition deletion written
     * @param nowInSec the time liveness is judged at
     */
    KeySetObserver(
            StorageFilter filter,
            Descriptor descriptor,
            Function<ByteBuffer, Tombstone> tombstones,
            boolean tombstonesComplete,
            long nowInSec,
            boolean reportArrivals) {
        this.filter = filter;
        this.descriptor = descriptor;
        this.tombstones = tombstones;
        this.tombstonesComplete = tombstonesComplete;
        this.nowInSec = nowInSec;
        this.reportArrivals = reportArrivals;
    }

    @Override
    public void begin() {}

    @Override
    public void startPartition(DecoratedKey k, long keyPosition, long keyPositionForSASI) {
        if (failed) {
            return;
        }
        try {
            Faults.hit("observer");
            finishPartition();
            token = k.getToken();
            hash = Keys.hash(k.getKey());
            live = false;
            shadowedUpTo = Long.MIN_VALUE;
            Tombstone t = tombstones.apply(k.getKey());
            if (t != null) {
                shadowedUpTo = t.markedForDeleteAt();
                builder.tombstone(k.getKey(), t);
            }
        } catch (Throwable t) {
            fail(t);
        }
    }

    @Override
    public void staticRow(Row row) {
        noteRow(row);
    }

    @Override
    public void nextUnfilteredCluster(Unfiltered unfiltered) {
        if (unfiltered.isRow()) {
            noteRow((Row) unfiltered);
        }
    }

    private void noteRow(Row row) {
        if (failed || live) {
            return;
        }
        try {
            live = Liveness.liveTimestamp(row, nowInSec, builder.expiryFloor) > shadowedUpTo;
        } catch (Throwable t) {
            fail(t);
        }
    }

    private void finishPartition() {
        if (token != null) {
            Token t = token;
            builder.add(t, hash, live);
            token = null;
            if (live && reportArrivals) {
                KeyEvents events = filter.events();
                if (events != null) {
                    events.arriving(t);
                }
            }
        }
    }

    /** Called when the SSTable is complete (possibly twice: at finish and at commit). */
    @Override
    public void complete() {
        if (failed || completed) {
            return;
        }
        try {
            finishPartition();
            completed = true;
            filter.observed(descriptor, builder.build(filter.options, tombstonesComplete));
        } catch (Throwable t) {
            fail(t);
        }
    }

    @Override
    public void abort(Throwable accumulator) {
        filter.observationAborted(descriptor);
    }

    private void fail(Throwable t) {
        failed = true;
        filter.observationFailed(descriptor, t);
    }
}
