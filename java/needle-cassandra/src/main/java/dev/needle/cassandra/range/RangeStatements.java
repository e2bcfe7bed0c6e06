package dev.needle.cassandra.range;

import dev.needle.cassandra.range.RangePlanner.Strategy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.EnumSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.function.Function;
import java.util.function.LongPredicate;
import java.util.function.Predicate;
import java.util.function.Supplier;
import org.apache.cassandra.cql3.Attributes;
import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.Operator;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.ResultSet;
import org.apache.cassandra.cql3.VariableSpecifications;
import org.apache.cassandra.cql3.restrictions.StatementRestrictions;
import org.apache.cassandra.cql3.statements.BatchStatement;
import org.apache.cassandra.cql3.statements.ModificationStatement;
import org.apache.cassandra.cql3.statements.SelectStatement;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.IMutation;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.filter.DataLimits;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.service.pager.PagingState;
import org.apache.cassandra.tracing.Tracing;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.transport.messages.ResultMessage;

/**
 * Where the query handler meets the ordered indexes: entries before each write of an indexed
 * column, and range SELECTs answered from an index when it is ready (else, and on request, the
 * stock way, which asks every node).
 */
public final class RangeStatements {
    /**
     * Custom payload key that chooses how a range query runs: {@code index}, {@code scan} (the
     * parallel scan, even where SAI indexes the column), {@code stock} (the way Cassandra itself
     * would answer: SAI if the column has it, else the scan), {@code plan} (the planner chooses
     * with the client's own scan among the strategies, see {@link #PLAN_PAYLOAD}), or {@code
     * switch} (the index's first page, then the parallel scan of the rest of the range: the
     * planner's switch after an overrun, on demand).
     */
    public static final String STRATEGY_PAYLOAD = "needle.range";

    /**
     * Response payload key of a {@code plan} request: the strategy that answered ({@code index},
     * {@code sai}, {@code scan}) or {@code client-scan}, which answers with no rows and leaves
     * the query to the client's parallel scan (rows then go from each node to the client, 8
     * splits at a time, where a page of the coordinator's scan reads about one page's worth).
     */
    public static final String PLAN_PAYLOAD = "needle.range.plan";

    /** Response payload key of a {@code plan} request: the rows expected over the whole range. */
    public static final String ESTIMATE_PAYLOAD = "needle.range.estimate";

    /**
     * Request payload key with which a client reports its last scan ({@code "rows,ms"}), so that
     * the planner learns what a client's scan costs.
     */
    public static final String CLIENT_SCAN_PAYLOAD = "needle.range.client_scan";

    /** An index answer that reaches this many times its estimate on its first page may start again the stock way. */
    static final double OVERRUN = 8;

    private RangeStatements() {}

    /** Writes the index entries of a write (if it sets an indexed column) before it is sent. */
    public static void beforeWrite(
            ModificationStatement write, QueryState state, QueryOptions options, Dispatcher.RequestTime t) {
        List<RangeIndex> indexes = indexesSetBy(write);
        if (indexes.isEmpty()) {
            return;
        }
        BatchStatement one = new BatchStatement(
                BatchStatement.Type.UNLOGGED, VariableSpecifications.empty(), List.of(write), Attributes.none());
        List<? extends IMutation> mutations = one.getMutations(
                state.getClientState(),
                BatchQueryOptions.withoutPerStatementVariables(options),
                false,
                options.getTimestamp(state),
                options.getNowInSeconds(state),
                t);
        for (RangeIndex index : indexes) {
            EntryWriter.write(index, mutations, options.getConsistency(), t);
        }
    }

    /** Writes the index entries of a batch's writes before the batch is sent. */
    public static void beforeBatch(
            BatchStatement batch, QueryState state, BatchQueryOptions options, Dispatcher.RequestTime t) {
        boolean any = false;
        for (ModificationStatement w : batch.getStatements()) {
            any |= !indexesSetBy(w).isEmpty();
        }
        if (!any) {
            return;
        }
        List<? extends IMutation> mutations = batch.getMutations(
                state.getClientState(), options, false, options.getTimestamp(state), options.getNowInSeconds(state), t);
        java.util.Set<RangeIndex> seen = new java.util.HashSet<>();
        for (ModificationStatement w : batch.getStatements()) {
            for (RangeIndex index : indexesSetBy(w)) {
                if (seen.add(index)) {
                    EntryWriter.write(index, mutations, options.getConsistency(), t);
                }
            }
        }
    }

    private static List<RangeIndex> indexesSetBy(ModificationStatement write) {
        List<RangeIndex> all = RangeIndexes.of(write.metadata().id);
        if (all.isEmpty()) {
            return all;
        }
        return all.stream()
                .filter(i -> write.updatedColumns().contains(i.column()))
                .toList();
    }

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
        String asked = asked(payload);
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
                return restOfRange(select, state, options, index, filter, rest.after(), scanFrom, paging.remaining, t);
            }
            if (!IndexPagingState.isIndexPosition(paging.partitionKey)) {
                return stockAnswer.apply(laterPageWay(index, estimate, sai, scannable, cassandras));
            }
            return laterIndexPage(index, select, filter, bounds, state, options, t, asked, scannable, estimate);
        }
        if (payload != null && payload.containsKey(CLIENT_SCAN_PAYLOAD)) {
            double[] scan = clientScan(payload.get(CLIENT_SCAN_PAYLOAD));
            index.planner().observe(Strategy.CLIENT_SCAN, scan[0], scan[1]);
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
            answer.setCustomPayload(Map.of(
                    PLAN_PAYLOAD, utf8(answered.label()),
                    ESTIMATE_PAYLOAD, utf8(Double.isNaN(estimate) ? "unknown" : Long.toString(Math.round(estimate)))));
        }
        return answer;
    }

    /**
     * A later page of a query whose earlier pages the index answered: by the index, or, when the
     * query has returned more than {@link #OVERRUN} times its estimate and the planner now expects
     * the scan of the whole range to finish sooner than the index's remaining rows, by the
     * parallel scan of the rest of the range ({@link #restOfRange}). A query that asked for the
     * index by the custom payload keeps it; one that asked for {@code switch} gives way to the
     * scan from its second page on (what the planner does on its own when the index overruns,
     * on demand, for tests and diagnostics).
     */
    private static ResultMessage laterIndexPage(
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
            abandon = rowsSoFar -> planner.switchTo(byIndex, scan, rowsSoFar, OVERRUN) != null;
        }
        long startedAt = System.currentTimeMillis();
        long began = System.nanoTime();
        RangeRead.Answer a = RangeRead.answer(index, select, filter, bounds, state, options, t, abandon);
        if (a != null) {
            learnFromIndex(index, a);
            return a.message();
        }
        PagingState paging = options.getPagingState();
        EntryCursor.Position after =
                IndexPagingState.decode(paging.partitionKey).after();
        Tracing.trace(
                "Needle: the index has returned more than {} times the ~{} rows expected; the scan answers the rest"
                        + " of the range",
                OVERRUN,
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
    private static ResultMessage.Rows restOfRange(
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
    private static Strategy laterPageWay(
            RangeIndex index, double estimate, boolean sai, boolean scannable, Strategy cassandras) {
        if (!sai || !scannable || Double.isNaN(estimate)) {
            return cassandras;
        }
        Strategy way = index.planner().cheapest(estimate, EnumSet.of(Strategy.SAI, Strategy.SCAN));
        return way == null ? cassandras : way;
    }

    private static ByteBuffer utf8(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String text(ByteBuffer b) {
        return StandardCharsets.UTF_8.decode(b.duplicate()).toString();
    }

    /** A client's report of its last scan, {@code "rows,ms"}: {rows, ms}. */
    private static double[] clientScan(ByteBuffer report) {
        String s = text(report);
        String[] parts = s.split(",");
        try {
            if (parts.length == 2) {
                double rows = Double.parseDouble(parts[0]);
                double ms = Double.parseDouble(parts[1]);
                if (rows >= 0 && ms >= 0 && Double.isFinite(rows) && Double.isFinite(ms)) {
                    return new double[] {rows, ms};
                }
            }
        } catch (NumberFormatException e) {
            // reported below
        }
        throw new InvalidRequestException("custom payload " + CLIENT_SCAN_PAYLOAD
                + " must be 'rows,milliseconds' (two numbers >= 0), not '" + s + "'");
    }

    /**
     * The planner learns the index's cost from each query it answered whole, on the node that
     * answers the last page: the rows of every page and their time on their coordinators.
     */
    private static void learnFromIndex(RangeIndex index, RangeRead.Answer a) {
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

    /** What the custom payload asks for ({@code index}, {@code scan}, {@code stock}, {@code plan} or {@code switch}), or null. */
    private static String asked(Map<String, ByteBuffer> payload) {
        if (payload == null || !payload.containsKey(STRATEGY_PAYLOAD)) {
            return null;
        }
        String asked = text(payload.get(STRATEGY_PAYLOAD));
        if (!Set.of("index", "stock", "scan", "plan", "switch").contains(asked)) {
            throw new InvalidRequestException("custom payload " + STRATEGY_PAYLOAD
                    + " must be 'index', 'scan', 'stock', 'plan' or 'switch', not '" + asked + "'");
        }
        return asked;
    }

    /** Whether Cassandra's SAI also indexes the column: then the stock way uses it (see NeedleRangeIndex). */
    private static boolean hasSai(SelectStatement select, RangeIndex index) {
        return RangeIndex.saiIndexes(Keyspace.openAndGetStore(select.table), index.column());
    }
}
