package dev.needle.cassandra.range;

import dev.needle.cassandra.range.RangePlanner.Strategy;
import java.nio.ByteBuffer;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.LongPredicate;
import java.util.function.Supplier;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.ResultSet;
import org.apache.cassandra.cql3.restrictions.StatementRestrictions;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.filter.DataLimits;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.service.pager.PagingState;
import org.apache.cassandra.tracing.Tracing;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;

/**
 * Where the query handler's range SELECTs meet the ordered indexes: the first page of a range
 * query answered by the way the planner (or the custom payload, {@link RangePayload}) chooses, the
 * index when it is ready or a stock way, which asks every node; later pages go on the way the first
 * went ({@link LaterPages}). The entries of writes: {@link EntryWriter}.
 */
public final class RangeStatements {
    /** An index answer that reaches this many times its estimate on its first page may start again the stock way. */
    static final double OVERRUN = 8;

    private RangeStatements() {}

    /**
     * Answers a range SELECT on a column with an ordered index by the index, by the
     * {@link ParallelScan} of every node, or, where the column also has SAI, by SAI ({@code
     * stockWay}: Cassandra's own execution, which uses it), as the planner or the custom payload
     * chooses; returns null for statements this does not concern: tables
     * without an ordered index on a column the statement restricts, and statements that are not
     * a plain range query over every partition (aggregates, partition or clustering restrictions,
     * per-partition limits, serial reads). Each decision is traced (strategy, estimate, actual).
     */
    public static ResultMessage answer(
            SelectStatement select,
            QueryState state,
            QueryOptions options,
            Map<String, ByteBuffer> payload,
            Dispatcher.RequestTime t,
            Supplier<ResultMessage> stockWay) {
        List<RangeIndex> indexes = RangeIndexes.of(select.table.id);
        if (indexes.isEmpty() || !plainRangeQuery(select, options)) {
            return null;
        }
        RowFilter filter = select.getRowFilter(options, state.getClientState());
        RangeIndex index = null;
        EntryCursor.Bound[] bounds = null;
        for (RangeIndex i : indexes) {
            bounds = RangeRead.bounds(i, filter);
            if (bounds != null) {
                index = i;
                break;
            }
        }
        if (index == null) {
            return null;
        }
        boolean ready = index.nodes().ready();
        String asked = RangePayload.asked(payload);
        boolean forClient = "plan".equals(asked); // the client can scan itself: its scan is a strategy
        boolean sai = hasSai(select, index);
        boolean scannable = ParallelScan.supports(select.table);
        // The stock ways the planner weighs against the index: SAI when the column has it, and the
        // parallel scan, the client's own when it asked for a plan on a column without SAI (with
        // SAI, Cassandra would answer the client's split queries by SAI as well).
        Set<Strategy> stockWays = EnumSet.noneOf(Strategy.class);
        if (sai) {
            stockWays.add(Strategy.SAI);
        }
        if (scannable || !sai) {
            stockWays.add(forClient && !sai && scannable ? Strategy.CLIENT_SCAN : Strategy.SCAN);
        }
        Strategy cassandras = sai ? Strategy.SAI : Strategy.SCAN; // the way Cassandra itself would answer
        double estimate = ready ? index.estimateRows(bounds[0].value(), bounds[1].value()) : Double.NaN;
        // The scan is the parallel one where the partitioner allows; its pages, SAI's and
        // Cassandra's own sequential scan's are interchangeable (Cassandra's paging state).
        Function<Strategy, ResultMessage> stockAnswer = way -> way == Strategy.SCAN && scannable
                ? ParallelScan.answer(select, state, options, estimate, t)
                : stockWay.get();
        PagingState paging = options.getPagingState();
        if (paging != null) {
            // A later page goes on the way the page before went: from the index position, the
            // scan of the rest of the range after index pages, or a stock way's paging state.
            if (IndexPagingState.isRestOfScan(paging.partitionKey)) {
                IndexPagingState.Rest rest = IndexPagingState.decodeRest(paging.partitionKey);
                PagingState scanFrom =
                        new PagingState(rest.scanKey(), paging.rowMark, paging.remaining, paging.remainingInPartition);
                return LaterPages.restOfRange(
                        select, state, options, index, filter, rest.after(), scanFrom, paging.remaining, t);
            }
            if (!IndexPagingState.isIndexPosition(paging.partitionKey)) {
                return stockAnswer.apply(LaterPages.stockWay(index, estimate, sai, scannable, cassandras));
            }
            return LaterPages.byIndex(index, select, filter, bounds, state, options, t, asked, scannable, estimate);
        }
        double[] clientScan = RangePayload.clientScan(payload);
        if (clientScan != null) {
            index.planner().observe(Strategy.CLIENT_SCAN, clientScan[0], clientScan[1]);
        }
        RangePlanner.Decision d;
        RangePlans.ChosenBy by;
        if (!ready) {
            Tracing.trace(
                    "Needle: range index {} is not ready on every node yet; {}",
                    index.tables().index(),
                    cassandras);
            d = null;
            by = RangePlans.ChosenBy.NOT_READY;
        } else if (asked != null && !forClient) {
            Strategy way = switch (asked) {
                case "index", "switch" -> Strategy.INDEX;
                case "scan" -> scannable ? Strategy.SCAN : cassandras;
                default -> cassandras;
            };
            d = new RangePlanner.Decision(way, estimate, Map.of(), false);
            Tracing.trace(
                    "Needle: range query by {} as the custom payload asks (~{} rows expected)", way.label(), (long)
                            estimate);
            by = RangePlans.ChosenBy.PAYLOAD;
        } else {
            Set<Strategy> available = EnumSet.copyOf(stockWays);
            available.add(Strategy.INDEX);
            d = index.planner().choose(estimate, available);
            by = d.explored() ? RangePlans.ChosenBy.EXPLORING : RangePlans.ChosenBy.PLANNER;
            Tracing.trace("Needle: range query by {}", d.describe());
        }
        long startedAt = System.currentTimeMillis();
        long began = System.nanoTime();
        long t0 = began;
        ResultMessage answer;
        long rows;
        boolean morePages;
        RangeRead.Answer a = null;
        if (d != null && d.strategy() == Strategy.INDEX) {
            // The planner's choice is revisited while the first page fills (a choice asked for is kept).
            RangePlanner.Decision chosen = d;
            RangePlanner planner = index.planner();
            Strategy[] switchTo = new Strategy[1];
            LongPredicate abandon = asked != null && !forClient
                    ? null
                    : rowsSoFar -> (switchTo[0] = planner.switchTo(chosen, stockWays, rowsSoFar, OVERRUN)) != null;
            a = RangeRead.answer(index, select, filter, bounds, state, options, t, abandon);
            if (a == null) {
                Tracing.trace(
                        "Needle: the index returned more than {} times the ~{} rows expected; answering {} instead",
                        OVERRUN,
                        (long) estimate,
                        switchTo[0].label());
                d = new RangePlanner.Decision(switchTo[0], estimate, d.predicted(), false);
                by = RangePlans.ChosenBy.SWITCHED;
                t0 = System.nanoTime(); // the stock way's own latency is what its model learns
            }
        }
        Strategy stock = d == null ? cassandras : d.strategy(); // the way answering if the index does not
        if (a == null && stock == Strategy.CLIENT_SCAN) {
            // The client scans: no rows from here, only the plan (below).
            answer = new ResultMessage.Rows(
                    new ResultSet(select.getResultMetadata().copy()));
            rows = 0;
            morePages = false;
            Tracing.trace("Needle: the client scans the range itself");
        } else if (a != null) {
            answer = a.message();
            rows = a.work().rows();
            morePages = a.message().result.metadata.getPagingState() != null;
            Tracing.trace(
                    "Needle: index answered {} rows ({} entries read, {} index reads) in {} ms",
                    rows,
                    a.work().entries(),
                    a.work().partitionReads(),
                    (System.nanoTime() - t0) / 1_000_000);
        } else {
            answer = stockAnswer.apply(stock);
            rows = answer instanceof ResultMessage.Rows r ? r.result.size() : 0;
            morePages = answer instanceof ResultMessage.Rows r && r.result.metadata.getPagingState() != null;
            Tracing.trace(
                    "Needle: {} answered {} rows in {} ms", stock.label(), rows, (System.nanoTime() - t0) / 1_000_000);
        }
        if (a != null) {
            learnFromIndex(index, a);
        } else if (d != null && !morePages && stock != Strategy.CLIENT_SCAN) {
            // A whole answer in one page: its latency is the query's, which the planner learns from.
            // (The stock ways' later pages carry Cassandra's paging state, which has no room for
            // the query's progress: a paged stock answer is not learned from.)
            index.planner().observe(stock, rows, (System.nanoTime() - t0) / 1e6);
        }
        Strategy answered = a != null ? Strategy.INDEX : stock;
        double millis = (System.nanoTime() - began) / 1e6; // a switched query's included
        index.plans().record(new RangePlans.Plan(startedAt, answered, by, estimate, rows, millis, morePages));
        if (forClient) {
            answer.setCustomPayload(RangePayload.plan(answered, estimate));
        }
        return answer;
    }

    /**
     * The planner learns the index's cost from each query it answered whole, on the node that
     * answers the last page: the rows of every page and their time on their coordinators.
     */
    static void learnFromIndex(RangeIndex index, RangeRead.Answer a) {
        if (a.last() && a.query() != null) {
            index.planner().observe(Strategy.INDEX, a.query().rows(), a.query().nanos() / 1e6);
        }
    }

    private static boolean plainRangeQuery(SelectStatement select, QueryOptions options) {
        ConsistencyLevel cl = options.getConsistency();
        StatementRestrictions r = select.getRestrictions();
        return cl != null
                && !cl.isSerialConsistency()
                && !r.hasPartitionKeyRestrictions()
                && !r.isPartitionKeyRestrictionsOnToken()
                && !r.hasClusteringColumnsRestrictions()
                && !select.getSelection().isAggregate()
                && select.getAggregationSpec(options) == null
                && select.getPerPartitionLimit(options) == DataLimits.NO_LIMIT;
    }

    /** Whether Cassandra's SAI also indexes the column: then the stock way uses it (see NeedleRangeIndex). */
    private static boolean hasSai(SelectStatement select, RangeIndex index) {
        return RangeIndex.saiIndexes(Keyspace.openAndGetStore(select.table), index.column());
    }
}
