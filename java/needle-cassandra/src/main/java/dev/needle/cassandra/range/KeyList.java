package dev.needle.cassandra.range;

import dev.needle.cassandra.base.WritePathIndexGroup;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.NoSuchElementException;
import java.util.TreeMap;
import java.util.TreeSet;
import org.apache.cassandra.db.Clustering;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DataRange;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.PartitionRangeReadCommand;
import org.apache.cassandra.db.ReadExecutionController;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.filter.ClusteringIndexNamesFilter;
import org.apache.cassandra.db.filter.DataLimits;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.db.partitions.AbstractUnfilteredPartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.SingletonIndexQueryPlan;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.ByteBufferUtil;

/**
 * A list of primary keys carried by a custom expression of the ordered index, and what each node
 * does with one: its encoding, the query plan Cassandra gives a read that carries one, and a
 * replica's part, the rows of the listed keys that it holds ({@link #replicaRows}). The
 * coordinator's side, which sends the lists, is {@code KeyFetch}.
 */
public final class KeyList {
    /** A row's primary key as the index holds it: the partition key and the serialized clustering. */
    record Key(ByteBuffer pk, ByteBuffer ck) {
        int encodedSize() {
            return 4 + pk.remaining() + ck.remaining();
        }
    }

    /** The expression's first bytes: tells a key list from any other value. */
    private static final byte[] MAGIC = {'N', 'K', 'F', 1};

    /** A custom expression's value is written with a 16-bit length: keys beyond go in another read. */
    static final int MAX_EXPRESSION_BYTES = 60_000;

    private KeyList() {}

    /** Keys cut into lists that each fit an expression, and the keys too large for any. */
    record Lists(List<List<Key>> expressions, List<Key> alone) {}

    static Lists lists(List<Key> keys) {
        List<List<Key>> expressions = new ArrayList<>();
        List<Key> alone = new ArrayList<>();
        List<Key> list = new ArrayList<>();
        int bytes = MAGIC.length;
        for (Key k : keys) {
            if (MAGIC.length + k.encodedSize() > MAX_EXPRESSION_BYTES) {
                alone.add(k);
                continue;
            }
            if (bytes + k.encodedSize() > MAX_EXPRESSION_BYTES) {
                expressions.add(list);
                list = new ArrayList<>();
                bytes = MAGIC.length;
            }
            list.add(k);
            bytes += k.encodedSize();
        }
        if (!list.isEmpty()) {
            expressions.add(list);
        }
        return new Lists(expressions, alone);
    }

    /** The keys' clusterings by partition, partitions in token order. */
    static TreeMap<DecoratedKey, NavigableSet<Clustering<?>>> byPartition(TableMetadata base, List<Key> keys) {
        TreeMap<DecoratedKey, NavigableSet<Clustering<?>>> out = new TreeMap<>();
        for (Key k : keys) {
            out.computeIfAbsent(base.partitioner.decorateKey(k.pk()), d -> new TreeSet<>(base.comparator))
                    .add(Clustering.serializer.deserialize(
                            k.ck(), EntryWriter.CLUSTERING_FORMAT, base.comparator.subtypes()));
        }
        return out;
    }

    static ByteBuffer encode(List<Key> keys) {
        int size = MAGIC.length;
        for (Key k : keys) {
            size += k.encodedSize();
        }
        ByteBuffer b = ByteBuffer.allocate(size);
        b.put(MAGIC);
        for (Key k : keys) {
            ByteBufferUtil.writeShortLength(b, k.pk().remaining());
            b.put(k.pk().duplicate());
            ByteBufferUtil.writeShortLength(b, k.ck().remaining());
            b.put(k.ck().duplicate());
        }
        return b.flip();
    }

    static List<Key> decode(ByteBuffer value) {
        ByteBuffer b = value.duplicate();
        for (byte m : MAGIC) {
            if (!b.hasRemaining() || b.get() != m) {
                throw new IllegalArgumentException("not a key list of Needle's ordered index");
            }
        }
        List<Key> keys = new ArrayList<>();
        while (b.hasRemaining()) {
            ByteBuffer pk = ByteBufferUtil.readBytesWithShortLength(b);
            ByteBuffer ck = ByteBufferUtil.readBytesWithShortLength(b);
            keys.add(new Key(pk, ck));
        }
        return keys;
    }

    /**
     * The key list {@code filter} holds for {@code target}, or null if it has none (a filtered
     * read of the stock way).
     */
    public static ByteBuffer keysOf(RowFilter filter, IndexMetadata target) {
        for (RowFilter.Expression e : filter.getExpressions()) {
            if (e instanceof RowFilter.CustomExpression c
                    && c.getTargetIndex().id.equals(target.id)) {
                return c.getValue();
            }
        }
        return null;
    }

    /**
     * The ordered index's group in Cassandra's index registry: Cassandra's own for one index,
     * except that a read by key list is planned as what it is. Its ranges are all sent at once
     * (Cassandra would send one range first to learn how many rows a range holds, a round trip
     * lost here), and its replicas' answers are reconciled without replica filtering protection:
     * that protection re-reads rows that a replica's filter may have dropped, and nothing is
     * filtered here (every listed row comes back whatever its values).
     */
    public static final class IndexGroup extends WritePathIndexGroup {
        public IndexGroup(Index index) {
            super(index);
        }

        @Override
        public Index.QueryPlan queryPlanFor(RowFilter rowFilter) {
            if (keysOf(rowFilter, getIndex().getIndexMetadata()) != null) {
                return new KeyListPlan(getIndex(), getIndex().getPostIndexQueryFilter(rowFilter));
            }
            return super.queryPlanFor(rowFilter);
        }
    }

    private static final class KeyListPlan extends SingletonIndexQueryPlan {
        KeyListPlan(Index index, RowFilter postIndexFilter) {
            super(index, postIndexFilter);
        }

        @Override
        public boolean shouldEstimateInitialConcurrency() {
            return false;
        }

        @Override
        public boolean supportsReplicaFilteringProtection(RowFilter rowFilter) {
            return false;
        }
    }

    /**
     * Whether {@code column} is the stand-in column Cassandra makes for a custom expression on
     * {@code index} (named after the index, in no table).
     */
    public static boolean isExpressionColumn(ColumnMetadata column, TableMetadata table, IndexMetadata index) {
        return column.name.toString().equals(index.name) && table.getColumn(column.name) == null;
    }

    /**
     * A replica's part of a key fetch: the rows of the listed keys that fall in {@code command}'s
     * range, read from this node's memtables and SSTables, in token order, tombstones included (the
     * coordinator reconciles them with the other replicas').
     */
    public static UnfilteredPartitionIterator replicaRows(
            ColumnFamilyStore cfs,
            PartitionRangeReadCommand command,
            ByteBuffer keyList,
            ReadExecutionController controller) {
        TableMetadata table = command.metadata();
        DataRange range = command.dataRange();
        List<Map.Entry<DecoratedKey, NavigableSet<Clustering<?>>>> partitions = new ArrayList<>();
        for (Map.Entry<DecoratedKey, NavigableSet<Clustering<?>>> e :
                byPartition(table, decode(keyList)).entrySet()) {
            if (range.contains(e.getKey())) {
                partitions.add(e);
            }
        }
        return new AbstractUnfilteredPartitionIterator() {
            private int at;
            private UnfilteredRowIterator next;

            @Override
            public TableMetadata metadata() {
                return table;
            }

            @Override
            public boolean hasNext() {
                while (next == null && at < partitions.size()) {
                    Map.Entry<DecoratedKey, NavigableSet<Clustering<?>>> p = partitions.get(at++);
                    UnfilteredRowIterator rows = SinglePartitionReadCommand.create(
                                    table,
                                    command.nowInSec(),
                                    command.columnFilter(),
                                    RowFilter.none(),
                                    DataLimits.NONE,
                                    p.getKey(),
                                    new ClusteringIndexNamesFilter(p.getValue(), false))
                            .queryMemtableAndDisk(cfs, controller);
                    if (rows.isEmpty()) {
                        rows.close();
                    } else {
                        next = rows;
                    }
                }
                return next != null;
            }

            @Override
            public UnfilteredRowIterator next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                UnfilteredRowIterator r = next;
                next = null;
                return r;
            }

            @Override
            public void close() {
                if (next != null) {
                    next.close();
                    next = null;
                }
            }
        };
    }
}
