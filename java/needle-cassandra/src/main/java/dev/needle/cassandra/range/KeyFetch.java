package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.NavigableSet;
import java.util.NoSuchElementException;
import java.util.Optional;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.cassandra.config.CassandraRelevantProperties;
import org.apache.cassandra.db.Clustering;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.DataRange;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.PartitionRangeReadCommand;
import org.apache.cassandra.db.ReadExecutionController;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.filter.ClusteringIndexNamesFilter;
import org.apache.cassandra.db.filter.ColumnFilter;
import org.apache.cassandra.db.filter.DataLimits;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.db.partitions.AbstractUnfilteredPartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;
import org.apache.cassandra.dht.IPartitioner;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Range;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.SingletonIndexGroup;
import org.apache.cassandra.index.SingletonIndexQueryPlan;
import org.apache.cassandra.locator.ReplicaPlan;
import org.apache.cassandra.locator.ReplicaPlans;
import org.apache.cassandra.locator.TokenMetadata;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.StorageProxy;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.utils.ByteBufferUtil;
import org.apache.cassandra.utils.FBUtilities;

/**
 * Reads the rows of many primary keys in one range read of Cassandra's own, instead of one read
 * per partition: the keys travel in a custom expression of the ordered index, and each replica's
 * searcher ({@link #replicaRows}) reads those of its ranges from its own memtables and SSTables.
 * Cassandra does the rest as for any range read at the statement's consistency level: it sends
 * one request to each replica set (a 3-node cluster at replication factor 3 needs one: the ranges
 * merge), reconciles the replicas' answers and repairs them. It sends at most {@link
 * #RANGES_AT_ONCE} requests at once and the rest in rounds, one after another; where the ring has
 * more ranges than that even once merged (at replication factor 1 with vnodes, say), the keys are
 * read in spans of the ring ({@link #spans}), one range read each, all at once.
 *
 * <p>Why: an index answer of a few hundred rows fetched as single-partition reads sends a few
 * hundred requests to each replica a read goes to, and on a small cluster that messaging is most
 * of the query's time. Nothing is filtered by value on the replicas (the expression names keys,
 * not values), so the rows come back whole and the coordinator checks them against the entries as
 * before.
 */
public final class KeyFetch {
    /** The expression's first bytes: tells a key list from any other value. */
    private static final byte[] MAGIC = {'N', 'K', 'F', 1};

    /** A custom expression's value is written with a 16-bit length: keys beyond go in another read. */
    static final int MAX_EXPRESSION_BYTES = 60_000;

    /**
     * Cassandra's cap on the requests one range read sends at once (10 per core unless
     * {@code cassandra.max_concurrent_range_requests} says otherwise): a read over more ranges,
     * not merged, sends them in rounds.
     */
    static final int RANGES_AT_ONCE = Math.max(
            1,
            CassandraRelevantProperties.MAX_CONCURRENT_RANGE_REQUESTS.getInt(
                    FBUtilities.getAvailableProcessors() * 10));

    /**
     * How long the spans computed for a keyspace and level are used again (a ring
     * change computes them anew at once). Spans computed before a node went down or came back
     * may cost a round more or less, never a row: any spans that cover the ring read every key.
     */
    private static final long SPANS_FRESH_NANOS = 1_000_000_000L;

    /** Spans computed for a keyspace and level, and when, at which version of the ring. */
    private record Spans(long ringVersion, long madeAt, List<Range<Token>> spans) {}

    /** The spans last computed, by keyspace and level (queries at several levels each keep theirs). */
    private static final Map<String, Spans> SPANS = new ConcurrentHashMap<>();

    private KeyFetch() {}

    /** A row's primary key as the index holds it: the partition key and the serialized clustering. */
    record Key(ByteBuffer pk, ByteBuffer ck) {
        int encodedSize() {
            return 4 + pk.remaining() + ck.remaining();
        }
    }

    /**
     * Reads the rows of {@code keys} at {@code cl}, handing each to {@code out}, in as few range
     * reads as the expression's size allows (one for up to about 60 KB of keys). Keys too large
     * for an expression, or an index the schema no longer has, are read one partition at a time.
     */
    static void fetch(
            RangeIndex index,
            List<Key> keys,
            ConsistencyLevel cl,
            long nowInSec,
            Dispatcher.RequestTime t,
            Consumer<RangeRead.Fetched> out) {
        TableMetadata table = Schema.instance.getTableMetadata(index.base().id);
        Optional<IndexMetadata> target = table == null ? Optional.empty() : table.indexes.get(index.id());
        if (target.isEmpty()) { // dropped while the query ran
            index.plans().keysRead(0, keys.size());
            readByPartition(index.base(), keys, cl, nowInSec, t, out);
            return;
        }
        Lists lists = lists(keys);
        index.plans().keysRead(keys.size() - lists.alone().size(), lists.alone().size());
        for (List<Key> list : lists.expressions()) {
            read(table, target.get(), list, cl, nowInSec, t, out);
        }
        if (!lists.alone().isEmpty()) {
            readByPartition(index.base(), lists.alone(), cl, nowInSec, t, out);
        }
    }

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

    private static void read(
            TableMetadata table,
            IndexMetadata target,
            List<Key> keys,
            ConsistencyLevel cl,
            long nowInSec,
            Dispatcher.RequestTime t,
            Consumer<RangeRead.Fetched> out) {
        List<Range<Token>> spans = spans(table, cl);
        if (spans.size() <= 1) {
            RangeRead.forEachRow(
                    StorageProxy.getRangeSlice(
                            command(table, target, keys, nowInSec, cl, DataRange.allData(table.partitioner)), cl, t),
                    out);
            return;
        }
        // One range read per span, all at once: Cassandra would send the spans' requests in
        // rounds, each after the one before has answered.
        List<List<Key>> bySpan = bySpan(table.partitioner, spans, keys);
        List<RangeThreads.Ahead<List<RangeRead.Fetched>>> reads = new ArrayList<>();
        try {
            for (int i = 0; i < spans.size(); i++) {
                if (bySpan.get(i).isEmpty()) {
                    continue;
                }
                PartitionRangeReadCommand command =
                        command(table, target, bySpan.get(i), nowInSec, cl, DataRange.forTokenRange(spans.get(i)));
                reads.add(RangeThreads.ahead(() -> {
                    List<RangeRead.Fetched> rows = new ArrayList<>();
                    RangeRead.forEachRow(StorageProxy.getRangeSlice(command, cl, t), rows::add);
                    return rows;
                }));
            }
            for (RangeThreads.Ahead<List<RangeRead.Fetched>> read : reads) {
                read.get().forEach(out);
            }
        } finally {
            reads.forEach(RangeThreads.Ahead::drop);
        }
    }

    private static PartitionRangeReadCommand command(
            TableMetadata table,
            IndexMetadata target,
            List<Key> keys,
            long nowInSec,
            ConsistencyLevel cl,
            DataRange range) {
        RowFilter filter = RowFilter.create(cl.needsReconciliation());
        filter.addCustomIndexExpression(table, target, encode(keys));
        return PartitionRangeReadCommand.create(
                table, nowInSec, ColumnFilter.all(table), filter, DataLimits.NONE, range);
    }

    /**
     * The ring cut into spans of whole token ranges that Cassandra reads each in one round: at
     * most {@link #RANGES_AT_ONCE} requests once it has merged the adjacent ranges whose replicas
     * can answer together at {@code cl} (as its range reads merge them). None where the ring's
     * ranges are that few anyway or its tokens are not Murmur3's: the whole ring is read at once.
     */
    static List<Range<Token>> spans(TableMetadata table, ConsistencyLevel cl) {
        TokenMetadata tokens = StorageService.instance.getTokenMetadata();
        long ringVersion = tokens.getRingVersion();
        long now = System.nanoTime();
        String key = table.keyspace + '/' + cl;
        Spans last = SPANS.get(key);
        if (last != null && last.ringVersion == ringVersion && now - last.madeAt < SPANS_FRESH_NANOS) {
            return last.spans;
        }
        List<Range<Token>> spans = spans(Keyspace.open(table.keyspace), tokens.sortedTokens(), cl);
        SPANS.put(key, new Spans(ringVersion, now, spans));
        return spans;
    }

    private static List<Range<Token>> spans(Keyspace keyspace, List<Token> ring, ConsistencyLevel cl) {
        if (ring.size() < RANGES_AT_ONCE || !(ring.get(0) instanceof Murmur3Partitioner.LongToken)) {
            return List.of();
        }
        List<Range<Token>> ranges = ParallelScan.splits(ring, 1);
        List<Range<Token>> spans = new ArrayList<>();
        Token left = ranges.get(0).left;
        ReplicaPlan.ForRangeRead current = null;
        int requests = 0;
        for (Range<Token> r : ranges) {
            ReplicaPlan.ForRangeRead next = ReplicaPlans.forRangeRead(keyspace, null, cl, Range.makeRowRange(r), 1);
            ReplicaPlan.ForRangeRead merged =
                    current == null ? null : ReplicaPlans.maybeMerge(keyspace, cl, current, next);
            if (merged != null) {
                current = merged;
                continue;
            }
            if (current != null && ++requests == RANGES_AT_ONCE) {
                spans.add(new Range<>(left, r.left));
                left = r.left;
                requests = 0;
            }
            current = next;
        }
        spans.add(new Range<>(left, ranges.get(ranges.size() - 1).right));
        return spans;
    }

    /** {@code keys} by the span of {@code spans} (in token order, covering the ring) that holds each. */
    static List<List<Key>> bySpan(IPartitioner partitioner, List<Range<Token>> spans, List<Key> keys) {
        List<List<Key>> out = new ArrayList<>(spans.size());
        for (int i = 0; i < spans.size(); i++) {
            out.add(new ArrayList<>());
        }
        for (Key k : keys) {
            Token token = partitioner.getToken(k.pk());
            int lo = 0;
            int hi = spans.size() - 1;
            while (lo < hi) { // the first span whose right end is at or after the token
                int mid = (lo + hi) >>> 1;
                if (spans.get(mid).right.compareTo(token) >= 0) {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
            out.get(lo).add(k);
        }
        return out;
    }

    /** The old way, one single-partition read per partition (all sent at once). */
    private static void readByPartition(
            TableMetadata base,
            List<Key> keys,
            ConsistencyLevel cl,
            long nowInSec,
            Dispatcher.RequestTime t,
            Consumer<RangeRead.Fetched> out) {
        List<SinglePartitionReadCommand> commands = new ArrayList<>();
        ColumnFilter columns = ColumnFilter.all(base);
        byPartition(base, keys)
                .forEach((pk, clusterings) -> commands.add(SinglePartitionReadCommand.create(
                        base,
                        nowInSec,
                        columns,
                        RowFilter.none(),
                        DataLimits.NONE,
                        pk,
                        new ClusteringIndexNamesFilter(clusterings, false))));
        RangeRead.forEachRow(
                StorageProxy.read(SinglePartitionReadCommand.Group.create(commands, DataLimits.NONE), cl, t), out);
    }

    /** The keys' clusterings by partition, partitions in token order. */
    private static TreeMap<DecoratedKey, NavigableSet<Clustering<?>>> byPartition(TableMetadata base, List<Key> keys) {
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
    public static final class IndexGroup extends SingletonIndexGroup {
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
