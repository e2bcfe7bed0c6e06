package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongPredicate;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.ResultSet;
import org.apache.cassandra.cql3.selection.ResultSetBuilder;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.service.pager.PagingState;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;

/**
 * Answers a range SELECT from the ordered index (RIX): reads the range's entries in order, fetches
 * their rows by primary key at the statement's consistency level (a batch at a time, each in one
 * range read by key list: {@link KeyFetch}; the next batches' read while one batch's is), keeps a
 * row only if it still holds the entry's value and satisfies every restriction of the statement
 * (so stale entries are dropped), and returns
 * the rows in the indexed column's order, a page at a time. The paging state it returns holds the
 * last entry read, so the next page starts after it whatever the directory has become meanwhile.
 *
 * <p>A row changed while a query runs may be returned at its old or its new value, or (if it
 * moved within the range against the read's direction) not at all: as a scan, a range query is
 * not a snapshot. Rows that do not change while it runs are returned exactly once.
 */
public final class RangeRead {
    /**
     * Batches whose rows are read ahead, on {@link RangeThreads}, while one batch's are read: the
     * 1,000 rows of a short range at 1 M rows (two batches, 256 and the rest) are read at once.
     */
    static final int FETCH_AHEAD = 3;

    private RangeRead() {}

    /** What an answer cost: entries read, rows returned, index partitions read. */
    public record Work(long entries, long rows, long partitionReads) {}

    /**
     * The answer and its cost; {@code query} is the whole query's so far (its earlier pages
     * included), null when an earlier page's paging state did not carry it.
     */
    public record Answer(ResultMessage.Rows message, Work work, Progress query) {
        /** Whether this page ends the query (no paging state for a next page). */
        public boolean last() {
            return message.result.metadata.getPagingState() == null;
        }
    }

    /**
     * What the pages of a query answered so far returned and took on their coordinators: carried
     * from page to page in the paging state, so that whichever node answers the last page knows
     * the query's latency (the time between pages, the client's, left out).
     */
    public record Progress(long rows, long nanos) {
        Progress plus(long pageRows, long pageNanos) {
            return new Progress(rows + pageRows, nanos + pageNanos);
        }
    }

    /** The value bounds of the statement's restrictions on the indexed column; null if it has none. */
    public static EntryCursor.Bound[] bounds(RangeIndex index, RowFilter filter) {
        EntryCursor.Bound lower = EntryCursor.Bound.NONE;
        EntryCursor.Bound upper = EntryCursor.Bound.NONE;
        boolean any = false;
        for (RowFilter.Expression e : filter.getExpressions()) {
            if (!e.column().equals(index.column())) {
                continue;
            }
            ByteBuffer v = e.getIndexValue();
            switch (e.operator()) {
                case GT, GTE ->
                    lower = maxLower(
                            index,
                            lower,
                            new EntryCursor.Bound(v, e.operator() == org.apache.cassandra.cql3.Operator.GTE));
                case LT, LTE ->
                    upper = minUpper(
                            index,
                            upper,
                            new EntryCursor.Bound(v, e.operator() == org.apache.cassandra.cql3.Operator.LTE));
                case EQ -> {
                    lower = maxLower(index, lower, new EntryCursor.Bound(v, true));
                    upper = minUpper(index, upper, new EntryCursor.Bound(v, true));
                }
                default -> {
                    return null;
                }
            }
            any = true;
        }
        return any ? new EntryCursor.Bound[] {lower, upper} : null;
    }

    private static EntryCursor.Bound maxLower(RangeIndex index, EntryCursor.Bound a, EntryCursor.Bound b) {
        if (a.value() == null) {
            return b;
        }
        int c = index.compare(a.value(), b.value());
        return c > 0 || (c == 0 && !a.inclusive()) ? a : b;
    }

    private static EntryCursor.Bound minUpper(RangeIndex index, EntryCursor.Bound a, EntryCursor.Bound b) {
        if (a.value() == null) {
            return b;
        }
        int c = index.compare(a.value(), b.value());
        return c < 0 || (c == 0 && !a.inclusive()) ? a : b;
    }

    /**
     * Answers {@code select} (whose restrictions on the indexed column give {@code bounds}) from
     * the index, a page at a time. It gives up, returning null (the page's rows go to no client;
     * the caller answers the rest of the range from where the page started), as soon as {@code
     * abandon} (if not null) holds for the rows the query has returned so far, its earlier pages'
     * and this page's: checked when a later page starts and after each fetched batch.
     */
    public static Answer answer(
            RangeIndex index,
            SelectStatement select,
            RowFilter filter,
            EntryCursor.Bound[] bounds,
            QueryState state,
            QueryOptions options,
            Dispatcher.RequestTime t,
            LongPredicate abandon) {
        long began = System.nanoTime();
        long nowInSec = options.getNowInSeconds(state);
        int userLimit = select.getLimit(options);
        PagingState paging = options.getPagingState();
        EntryCursor.Position after = null;
        Progress before = new Progress(0, 0);
        int remaining = userLimit;
        if (paging != null) {
            IndexPagingState.Continuation c = IndexPagingState.decode(paging.partitionKey);
            after = c.after();
            before = c.before();
            remaining = paging.remaining;
        }
        int pageSize = options.getPageSize();
        int want = Math.min(remaining, pageSize > 0 ? pageSize : Integer.MAX_VALUE);
        // The builder copies the metadata: the paging state goes on the built result's.
        ResultSetBuilder result = new ResultSetBuilder(
                select.getResultMetadata(), select.getSelection().newSelectors(options), false);
        LeafDirectory<ByteBuffer> directory = index.acquire();
        try {
            return page(
                    index, directory, select, filter, bounds, options, result, after, remaining, want, nowInSec, t,
                    abandon, before, began);
        } finally {
            index.release(directory);
        }
    }

    private static Answer page(
            RangeIndex index,
            LeafDirectory<ByteBuffer> directory,
            SelectStatement select,
            RowFilter filter,
            EntryCursor.Bound[] bounds,
            QueryOptions options,
            ResultSetBuilder result,
            EntryCursor.Position after,
            int remaining,
            int want,
            long nowInSec,
            Dispatcher.RequestTime t,
            LongPredicate abandon,
            Progress before,
            long began) {
        ConsistencyLevel cl = options.getConsistency();
        TableMetadata base = index.base();
        EntryCursor cursor = new EntryCursor(
                index,
                directory,
                RangeIndex.entryLevel(cl),
                bounds[0],
                bounds[1],
                after,
                Math.min(Math.max(want, 16), 5000));
        long entries = 0;
        int emitted = 0;
        EntryCursor.Position last = null;
        boolean more = true;
        long earlier = before == null ? 0 : before.rows(); // rows the query's earlier pages returned
        if (abandon != null && after != null && abandon.test(earlier)) {
            return null;
        }
        // Batches taken from the cursor and not yet emitted, the first read on this thread, the
        // others read ahead on the pool while it is (rows of a batch the page does not take are
        // dropped).
        ArrayDeque<Pending> pending = new ArrayDeque<>();
        EntryBatches batches = new EntryBatches(cursor);
        pending.add(new Pending(batches.next(want), null));
        try {
            while (emitted < want) {
                Pending current = pending.poll();
                List<EntryCursor.Position> batch = current.entries;
                if (batch.isEmpty()) {
                    more = false;
                    break;
                }
                entries += batch.size();
                readAhead(index, batches, cl, nowInSec, t, pending, emitted + batch.size(), want);
                Map<KeyList.Key, FetchedRow> rows =
                        current.rows == null ? fetch(index, batch, cl, nowInSec, t) : current.rows.get();
                List<EntryCursor.Position> superseded = new ArrayList<>();
                List<EntryCursor.Position> vanished = new ArrayList<>();
                for (EntryCursor.Position e : batch) {
                    last = e;
                    FetchedRow f = rows.get(new KeyList.Key(e.pk(), e.ck()));
                    if (f != null && StaleEntries.superseded(index, f.row(), e)) {
                        superseded.add(e);
                    } else if (StaleEntries.vanished(index, f, e)) {
                        vanished.add(e);
                    }
                    if (f == null || !matches(index, filter, f, e, nowInSec)) {
                        continue;
                    }
                    select.processPartition(f.asPartition(base), options, result, nowInSec);
                    if (++emitted == want) {
                        break;
                    }
                }
                StaleEntries.remove(index, superseded);
                StaleEntries.removeDeleted(index, vanished);
                if (emitted == want && last != batch.get(batch.size() - 1)) {
                    break; // the page is full inside this batch: the next page starts after 'last'
                }
                if (emitted < want && abandon != null && abandon.test(earlier + emitted)) {
                    return null;
                }
                if (pending.isEmpty()) {
                    pending.add(new Pending(batches.next(want - emitted), null));
                }
            }
        } finally {
            for (Pending p : pending) {
                if (p.rows != null) {
                    p.rows.drop();
                }
            }
        }
        ResultSet rs = result.build();
        Progress query = before == null ? null : before.plus(emitted, System.nanoTime() - began);
        if (emitted == want && more && remaining - emitted > 0 && last != null) {
            ByteBuffer position = IndexPagingState.encode(last, query);
            rs.metadata.setHasMorePages(new PagingState(position, null, remaining - emitted, Integer.MAX_VALUE));
        }
        return new Answer(new ResultMessage.Rows(rs), new Work(entries, emitted, cursor.partitionReads), query);
    }

    /** Entries of a batch taken from the cursor, and the read of their rows if it was started ahead. */
    private record Pending(List<EntryCursor.Position> entries, RangeThreads.Ahead<Map<KeyList.Key, FetchedRow>> rows) {}

    /**
     * Starts reading the rows of up to {@link #FETCH_AHEAD} further batches, while the entries in
     * hand ({@code inHand}: rows emitted, plus the current batch's and the pending batches'
     * entries) cannot fill the page.
     */
    private static void readAhead(
            RangeIndex index,
            EntryBatches batches,
            ConsistencyLevel cl,
            long nowInSec,
            Dispatcher.RequestTime t,
            ArrayDeque<Pending> pending,
            int inHand,
            int want) {
        for (Pending p : pending) {
            if (p.entries.isEmpty()) {
                return; // the cursor's end is already pending
            }
            inHand += p.entries.size();
        }
        while (pending.size() < FETCH_AHEAD && inHand < want) {
            List<EntryCursor.Position> next = batches.next(want - inHand);
            if (next.isEmpty()) {
                pending.add(new Pending(next, null)); // the cursor's end
                return;
            }
            pending.add(new Pending(next, RangeThreads.ahead(() -> fetch(index, next, cl, nowInSec, t))));
            inHand += next.size();
        }
    }

    private static boolean matches(RangeIndex index, RowFilter filter, FetchedRow f, EntryCursor.Position e, long now) {
        Cell<?> cell = f.row().getCell(index.column());
        if (cell == null || !cell.isLive(now) || index.compare(cell.buffer(), e.value()) != 0) {
            return false; // a stale entry: the row holds another value now, or none
        }
        return filter.isSatisfiedBy(index.base(), f.key(), f.row(), now);
    }

    /** Reads the rows of a batch of entries by primary key at {@code cl} ({@link KeyFetch}). */
    private static Map<KeyList.Key, FetchedRow> fetch(
            RangeIndex index,
            List<EntryCursor.Position> batch,
            ConsistencyLevel cl,
            long nowInSec,
            Dispatcher.RequestTime t) {
        List<KeyList.Key> keys = new ArrayList<>(batch.size());
        for (EntryCursor.Position e : batch) {
            keys.add(new KeyList.Key(e.pk(), e.ck()));
        }
        Map<KeyList.Key, FetchedRow> out = new HashMap<>();
        KeyFetch.fetch(
                index,
                keys,
                cl,
                nowInSec,
                t,
                f -> out.put(
                        new KeyList.Key(
                                f.key().getKey(),
                                EntryWriter.clustering(index, f.row().clustering())),
                        f));
        return out;
    }
}
