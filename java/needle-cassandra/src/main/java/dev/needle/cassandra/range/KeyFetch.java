package dev.needle.cassandra.range;

import dev.needle.cassandra.range.KeyList.Key;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Consumer;
import org.apache.cassandra.config.CassandraRelevantProperties;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.DataRange;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.PartitionRangeReadCommand;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.filter.ClusteringIndexNamesFilter;
import org.apache.cassandra.db.filter.ColumnFilter;
import org.apache.cassandra.db.filter.DataLimits;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.dht.IPartitioner;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Range;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.locator.ReplicaPlan;
import org.apache.cassandra.locator.ReplicaPlans;
import org.apache.cassandra.locator.TokenMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.StorageProxy;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.utils.FBUtilities;

/**
 * Reads the rows of many primary keys in one range read of Cassandra's own, instead of one read
 * per partition: the keys travel in a custom expression of the ordered index, and each replica's
 * searcher ({@link KeyList#replicaRows}) reads those of its ranges from its own memtables and SSTables.
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
            Consumer<FetchedRow> out) {
        TableMetadata table = Schema.instance.getTableMetadata(index.base().id);
        Optional<IndexMetadata> target = table == null ? Optional.empty() : table.indexes.get(index.id());
        if (target.isEmpty()) { // dropped while the query ran
            index.plans().keysRead(0, keys.size());
            readByPartition(index.base(), keys, cl, nowInSec, t, out);
            return;
        }
        KeyList.Lists lists = KeyList.lists(keys);
        index.plans().keysRead(keys.size() - lists.alone().size(), lists.alone().size());
        for (List<Key> list : lists.expressions()) {
            read(table, target.get(), list, cl, nowInSec, t, out);
        }
        if (!lists.alone().isEmpty()) {
            readByPartition(index.base(), lists.alone(), cl, nowInSec, t, out);
        }
    }

    private static void read(
            TableMetadata table,
            IndexMetadata target,
            List<Key> keys,
            ConsistencyLevel cl,
            long nowInSec,
            Dispatcher.RequestTime t,
            Consumer<FetchedRow> out) {
        List<Range<Token>> spans = spans(table, cl);
        if (spans.size() <= 1) {
            FetchedRow.forEach(
                    StorageProxy.getRangeSlice(
                            command(table, target, keys, nowInSec, cl, DataRange.allData(table.partitioner)), cl, t),
                    out);
            return;
        }
        // One range read per span, all at once: Cassandra would send the spans' requests in
        // rounds, each after the one before has answered.
        List<List<Key>> bySpan = bySpan(table.partitioner, spans, keys);
        List<RangeThreads.Ahead<List<FetchedRow>>> reads = new ArrayList<>();
        try {
            for (int i = 0; i < spans.size(); i++) {
                if (bySpan.get(i).isEmpty()) {
                    continue;
                }
                PartitionRangeReadCommand command =
                        command(table, target, bySpan.get(i), nowInSec, cl, DataRange.forTokenRange(spans.get(i)));
                reads.add(RangeThreads.ahead(() -> {
                    List<FetchedRow> rows = new ArrayList<>();
                    FetchedRow.forEach(StorageProxy.getRangeSlice(command, cl, t), rows::add);
                    return rows;
                }));
            }
            for (RangeThreads.Ahead<List<FetchedRow>> read : reads) {
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
        filter.addCustomIndexExpression(table, target, KeyList.encode(keys));
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
            Consumer<FetchedRow> out) {
        List<SinglePartitionReadCommand> commands = new ArrayList<>();
        ColumnFilter columns = ColumnFilter.all(base);
        KeyList.byPartition(base, keys)
                .forEach((pk, clusterings) -> commands.add(SinglePartitionReadCommand.create(
                        base,
                        nowInSec,
                        columns,
                        RowFilter.none(),
                        DataLimits.NONE,
                        pk,
                        new ClusteringIndexNamesFilter(clusterings, false))));
        FetchedRow.forEach(
                StorageProxy.read(SinglePartitionReadCommand.Group.create(commands, DataLimits.NONE), cl, t), out);
    }
}
