package dev.needle.cassandra.range;

import dev.needle.cassandra.range.RangePlanner.Strategy;
import java.util.EnumSet;
import java.util.Map;
import java.util.Set;
import java.util.function.LongPredicate;
import java.util.function.Predicate;
import org.apache.cassandra.cql3.Operator;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.service.pager.PagingState;
import org.apache.cassandra.tracing.Tracing;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;

/**
 * A range query's pages after its first, which go on the way the first page went: its paging
 * state says which. After index pages, the index goes on, or gives way to the parallel scan of
 * the rest of the range ({@link #restOfRange}, paging state {@link IndexPagingState#encodeRest});
 * after a stock way's page, a stock way goes on from Cassandra's own paging state.
 */
final class LaterPages {
    private LaterPages() {}

    /**
     * A later page of a query whose earlier pages the index answered: by the index, or, when the
     * query has returned more than {@link RangeStatements#OVERRUN} times its estimate and the
     * planner now expects the scan of the whole range to finish sooner than the index's remaining
     * rows, by the parallel scan of the rest of the range ({@link #restOfRange}). A query that asked for the
     * index by the custom payload keeps it; one that asked for {@code switch} gives way to the
     * scan from its second page on (what the planner does on its own when the index overruns,
     * on demand, for tests and diagnostics).
     */
    static ResultMessage byIndex(
            RangeIndex index,
            SelectStatement select,
            RowFilter filter,
            EntryCursor.Bound[] bounds,
            QueryState state,
            QueryOptions options,
            Dispatcher.RequestTime t,
            String asked,
            boolean scannable,
            double estimate) {
        LongPredicate abandon = null;
        if (scannable && "switch".equals(asked)) {
            abandon = rowsSoFar -> true;
        } else if (scannable && (asked == null || "plan".equals(asked)) && !Double.isNaN(estimate)) {
            RangePlanner planner = index.planner();
            RangePlanner.Decision byIndex = new RangePlanner.Decision(Strategy.INDEX, estimate, Map.of(), false);
            Set<Strategy> scan = EnumSet.of(Strategy.SCAN);
            abandon = rowsSoFar -> planner.switchTo(byIndex, scan, rowsSoFar, RangeStatements.OVERRUN) != null;
        }
        long startedAt = System.currentTimeMillis();
        long began = System.nanoTime();
        RangeRead.Answer a = RangeRead.answer(index, select, filter, bounds, state, options, t, abandon);
        if (a != null) {
            RangeStatements.learnFromIndex(index, a);
            return a.message();
        }
        PagingState paging = options.getPagingState();
        EntryCursor.Position after =
                IndexPagingState.decode(paging.partitionKey).after();
        Tracing.trace(
                "Needle: the index has returned more than {} times the ~{} rows expected; the scan answers the rest"
                        + " of the range",
                RangeStatements.OVERRUN,
                (long) estimate);
        ResultMessage.Rows rest = restOfRange(select, state, options, index, filter, after, null, paging.remaining, t);
        long rows = rest.result.size();
        boolean morePages = rest.result.metadata.getPagingState() != null;
        double millis = (System.nanoTime() - began) / 1e6;
        Tracing.trace("Needle: scan answered {} rows of the rest in {} ms", rows, (long) millis);
        index.plans()
                .record(new RangePlans.Plan(
                        startedAt, Strategy.SCAN, RangePlans.ChosenBy.SWITCHED, estimate, rows, millis, morePages));
        return rest;
    }

    /**
     * A page of the rows of a range that its index pages have not returned: those after entry
     * {@code after} (a greater value, or the same value and a greater primary key), by the
     * parallel scan, from {@code scanFrom} (null: the first page of the rest). Its paging state
     * carries {@code after} beside the scan's own ({@link IndexPagingState#encodeRest}).
     */
    static ResultMessage.Rows restOfRange(
            SelectStatement select,
            QueryState state,
            QueryOptions options,
            RangeIndex index,
            RowFilter filter,
            EntryCursor.Position after,
            PagingState scanFrom,
            int remaining,
            Dispatcher.RequestTime t) {
        ColumnMetadata column = index.column();
        // The statement's filter, and the column at least the value the index pages ended at (a
        // copy: 'without' a restriction it does not have copies it).
        RowFilter rest = filter.without(column, Operator.GTE, after.value());
        rest.add(column, Operator.GTE, after.value());
        Predicate<FetchedRow> notReturned = f -> {
            Cell<?> cell = f.row().getCell(column);
            int c = cell == null ? -1 : index.compare(cell.buffer(), after.value());
            if (c != 0) {
                return c > 0;
            }
            EntryCursor.Position p = new EntryCursor.Position(
                    cell.buffer(),
                    f.key().getKey(),
                    EntryWriter.clustering(index, f.row().clustering()));
            return EntryCursor.compare(index, p, after) > 0;
        };
        ResultMessage.Rows page =
                ParallelScan.answer(select, state, options, rest, notReturned, scanFrom, remaining, Double.NaN, t);
        PagingState next = page.result.metadata.getPagingState();
        if (next != null) {
            page.result.metadata.setHasMorePages(new PagingState(
                    IndexPagingState.encodeRest(after, next.partitionKey),
                    next.rowMark,
                    next.remaining,
                    next.remainingInPartition));
        }
        return page;
    }

    /**
     * The stock way that answers a later page of a query whose earlier pages were not the index's:
     * with SAI and the scan both possible, the one the planner expects cheaper for the whole range
     * (either goes on from Cassandra's paging state, and a page changes no answer).
     */
    static Strategy stockWay(RangeIndex index, double estimate, boolean sai, boolean scannable, Strategy cassandras) {
        if (!sai || !scannable || Double.isNaN(estimate)) {
            return cassandras;
        }
        Strategy way = index.planner().cheapest(estimate, EnumSet.of(Strategy.SAI, Strategy.SCAN));
        return way == null ? cassandras : way;
    }
}
