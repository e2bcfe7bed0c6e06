package dev.needle.cassandra.range;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Deque;
import java.util.List;
import java.util.concurrent.Future;
import java.util.function.Predicate;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.ResultSet;
import org.apache.cassandra.cql3.selection.ResultSetBuilder;
import org.apache.cassandra.cql3.selection.Selection;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.PartitionRangeReadCommand;
import org.apache.cassandra.db.ReadQuery;
import org.apache.cassandra.db.filter.DataLimits;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Range;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.service.pager.PagingState;
import org.apache.cassandra.service.pager.QueryPager;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.ProtocolVersion;
import org.apache.cassandra.transport.messages.ResultMessage;

/**
 * The stock strategy of a range query without SAI, done in parallel at the coordinator (the
 * dissertation's "no index"): the token ring cut along the cluster's own token ranges, at least
 * {@link #SPLITS_PER_NODE} splits per node, each split a filtered range read of Cassandra's own
 * (so each replica filters its rows locally, at the statement's consistency level), up to
 * {@link #CONCURRENCY} splits at a time, their rows returned in token order as Cassandra returns
 * them. It asks no index: on a column that SAI also indexes, each replica still filters its own
 * rows, as the scan is what the planner weighs against SAI and the ordered index.
 *
 * <p>Paging: a page reads splits in token order, as many at a time as the page is expected to
 * take whole (from the planner's estimate of the rows in the range; {@link #CONCURRENCY} without
 * an estimate). It ends at the end of a split when the next one is expected to overflow it (a
 * page may hold fewer rows than its size: drivers follow the paging state), else inside the split
 * that fills it. Its paging state is Cassandra's own (the last row's
 * partition key and clustering), so the next page may be answered by this scan or by Cassandra's
 * sequential pager alike, and a query paged across a change of plan (an index dropped, a node
 * without Needle) still returns each row once.
 *
 * <p>Cassandra's own range read does the same work one token range at a time, widening its
 * concurrency only as rows come back; on a query that filters most rows out it reads nearly
 * sequentially, which is what this class is for.
 */
final class ParallelScan {
    /** The ring is cut into at least this many splits per node. */
    static final int SPLITS_PER_NODE = 4;

    /** Splits read at the same time by one query (on {@link RangeThreads}, shared by every query). */
    static final int CONCURRENCY = RangeThreads.THREADS;

    private ParallelScan() {}

    /** Whether this scan can answer queries on {@code table} (Murmur3Partitioner only, Cassandra's default). */
    static boolean supports(TableMetadata table) {
        return table.partitioner instanceof Murmur3Partitioner;
    }

    /**
     * A page of {@code select}'s answer (or the whole answer if it is not paged).
     *
     * @param expectedRows the planner's estimate of the rows in the whole range, NaN if none
     */
    static ResultMessage.Rows answer(
            SelectStatement select,
            QueryState state,
            QueryOptions options,
            double expectedRows,
            Dispatcher.RequestTime t) {
        PagingState paging = options.getPagingState();
        int remaining = paging == null ? select.getLimit(options) : paging.remaining;
        return answer(select, state, options, null, null, paging, remaining, expectedRows, t);
    }

    /**
     * A page of the rows of {@code select} that {@code filter} (if not null, instead of the
     * statement's own) selects and {@code keep} (if not null) keeps at the coordinator, from
     * {@code paging} on (null: from the ring's start), at most {@code remaining} more in all.
     * With rows that {@code keep} drops, a page may end short of its size where a split's read
     * stopped at its limit, but never empty while rows may follow.
     */
    static ResultMessage.Rows answer(
            SelectStatement select,
            QueryState state,
            QueryOptions options,
            RowFilter filter,
            Predicate<FetchedRow> keep,
            PagingState paging,
            int remaining,
            double expectedRows,
            Dispatcher.RequestTime t) {
        long nowInSec = options.getNowInSeconds(state);
        Selection.Selectors selectors = select.getSelection().newSelectors(options);
        ReadQuery query = select.getQuery(
                options,
                state.getClientState(),
                selectors.getColumnFilter(),
                nowInSec,
                DataLimits.cqlLimits(select.getLimit(options)));
        PartitionRangeReadCommand whole = new Unindexed((PartitionRangeReadCommand) query, filter);
        int pageSize = options.getPageSize();
        int want = Math.min(remaining, pageSize > 0 ? pageSize : Integer.MAX_VALUE);

        List<Range<Token>> splits = splits();
        int first = 0;
        if (paging != null) {
            Token after = select.table.partitioner.getToken(paging.partitionKey);
            while (first < splits.size() - 1 && !splits.get(first).contains(after)) {
                first++;
            }
        }
        double perSplit = Double.isNaN(expectedRows) ? Double.NaN : expectedRows / splits.size();

        ConsistencyLevel cl = options.getConsistency();
        ProtocolVersion version = options.getProtocolVersion();
        ResultSetBuilder result = new ResultSetBuilder(select.getResultMetadata(), selectors, false);
        Deque<Future<Split>> reading = new ArrayDeque<>();
        int next = first;
        int emitted = 0;
        FetchedRow last = null;
        boolean more = false;
        boolean previousHadRows = false; // the split read last gave this page rows: the page may end after it
        try {
            boolean estimated = !Double.isNaN(perSplit) && perSplit > 0;
            while (emitted < want) {
                int room = want - emitted;
                if (estimated && reading.isEmpty() && previousHadRows && room < perSplit) {
                    // The next split is expected to overflow the page: the page ends here, at a
                    // split's end (a page may hold fewer rows than its size), rather than read a
                    // split of which the next page would read most again.
                    more = next < splits.size();
                    break;
                }
                // As many splits as the page's room is expected to take whole (at least one).
                int wave =
                        estimated ? (int) Math.max(1, Math.min(CONCURRENCY, Math.floor(room / perSplit))) : CONCURRENCY;
                while (reading.size() < wave && next < splits.size()) {
                    PagingState from = next == first ? paging : null;
                    PartitionRangeReadCommand part = whole.forSubRange(Range.makeRowRange(splits.get(next++)), false);
                    int limit = want - emitted;
                    reading.add(RangeThreads.POOL.submit(() -> read(part, from, limit, cl, state, version, t)));
                }
                if (reading.isEmpty()) {
                    break;
                }
                Split s = RangeThreads.await(reading.poll());
                int used = 0; // rows of the split this page went past, kept or not
                int kept = 0;
                while (used < s.rows().size() && emitted < want) {
                    last = s.rows().get(used++);
                    if (keep == null || keep.test(last)) {
                        select.processPartition(last.asPartition(select.table), options, result, nowInSec);
                        emitted++;
                        kept++;
                    }
                }
                previousHadRows = kept > 0;
                if (emitted == want) {
                    more = used < s.rows().size() || !s.exhausted() || next < splits.size() || !reading.isEmpty();
                } else if (!s.exhausted() && emitted > 0) {
                    // The split's read stopped at its limit on rows this page dropped: the page
                    // ends after the last of them, and the next goes on in this split.
                    more = true;
                    break;
                } else if (!s.exhausted()) {
                    // The same, on a page with no row yet: the split is read on from there first,
                    // for a page is never empty with more to come (the Java driver's synchronous
                    // iteration ends at an empty page).
                    PagingState from = after(select, last, remaining - emitted, version);
                    int limit = want - emitted;
                    PartitionRangeReadCommand part = s.part();
                    reading.addFirst(RangeThreads.POOL.submit(() -> read(part, from, limit, cl, state, version, t)));
                }
            }
        } finally {
            reading.forEach(f -> f.cancel(false)); // a read under way finishes; its rows are dropped
        }
        ResultSet rs = result.build();
        if (more && remaining - emitted > 0 && last != null) {
            rs.metadata.setHasMorePages(after(select, last, remaining - emitted, version));
        }
        return new ResultMessage.Rows(rs);
    }

    /** Cassandra's own paging state for going on after {@code row}, with {@code remaining} rows left. */
    private static PagingState after(SelectStatement select, FetchedRow row, int remaining, ProtocolVersion version) {
        return new PagingState(
                row.key().getKey(),
                PagingState.RowMark.create(select.table, row.row(), version),
                remaining,
                DataLimits.NO_LIMIT);
    }

    /**
     * Cassandra's range read of a statement (with {@code filter} instead of its own if not null)
     * without its index plan (the only way to build one is the constructor subclasses see). Its
     * sub-ranges ({@code forSubRange}) are plain range reads that inherit the missing plan, so
     * the replicas filter their rows as for {@code ALLOW FILTERING}.
     */
    private static final class Unindexed extends PartitionRangeReadCommand {
        Unindexed(PartitionRangeReadCommand c, RowFilter filter) {
            super(
                    false,
                    0,
                    false,
                    c.metadata(),
                    c.nowInSec(),
                    c.columnFilter(),
                    filter == null ? c.rowFilter() : filter,
                    c.limits(),
                    c.dataRange(),
                    null,
                    c.isTrackingWarnings());
        }
    }

    /** The rows one split's read returned, in token order, whether the split has no more, and its read. */
    private record Split(List<FetchedRow> rows, boolean exhausted, PartitionRangeReadCommand part) {}

    private static Split read(
            PartitionRangeReadCommand part,
            PagingState from,
            int limit,
            ConsistencyLevel cl,
            QueryState state,
            ProtocolVersion version,
            Dispatcher.RequestTime t) {
        QueryPager pager = part.getPager(from, version);
        List<FetchedRow> rows = new ArrayList<>();
        FetchedRow.forEach(pager.fetchPage(limit, cl, state.getClientState(), t), rows::add);
        return new Split(rows, pager.isExhausted(), part);
    }

    /**
     * The ring's token ranges as the token metadata has them now, each cut into equal pieces so
     * that there are at least {@link #SPLITS_PER_NODE} per node, in token order; the first starts
     * at the ring's minimum and the last ends there, so they cover every token once.
     */
    static List<Range<Token>> splits() {
        List<Token> ring = StorageService.instance.getTokenMetadata().sortedTokens();
        int nodes = Math.max(
                1, StorageService.instance.getTokenMetadata().getAllEndpoints().size());
        return splits(ring, nodes * SPLITS_PER_NODE);
    }

    static List<Range<Token>> splits(List<Token> ring, int atLeast) {
        long min = Long.MIN_VALUE;
        List<long[]> ranges = new ArrayList<>(); // (left, right] over (MIN, MAX]
        long left = min;
        for (Token token : ring) {
            long right = (long) token.getTokenValue();
            if (right != min) {
                ranges.add(new long[] {left, right});
                left = right;
            }
        }
        if (left != Long.MAX_VALUE) {
            ranges.add(new long[] {left, Long.MAX_VALUE});
        }
        int pieces = Math.max(1, (atLeast + ranges.size() - 1) / ranges.size());
        List<Range<Token>> out = new ArrayList<>(ranges.size() * pieces);
        for (long[] r : ranges) {
            long width = r[1] - r[0]; // unsigned: at most 2^64 - 1
            long step = Long.divideUnsigned(width, pieces);
            long from = r[0];
            for (int i = 0; i < pieces; i++) {
                long to = i == pieces - 1 || step == 0 ? r[1] : from + step;
                out.add(new Range<>(new Murmur3Partitioner.LongToken(from), new Murmur3Partitioner.LongToken(to)));
                from = to;
                if (to == r[1]) {
                    break;
                }
            }
        }
        return out;
    }
}
