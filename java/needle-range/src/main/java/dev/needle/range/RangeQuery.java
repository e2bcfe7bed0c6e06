package dev.needle.range;

import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.concurrent.atomic.AtomicReference;

/**
 * A range query on a column with Needle's ordered index, planned by Needle's planner with this
 * client's own parallel scan among the strategies (docs/range-queries.md, "the planner from the
 * client"). The query goes to a coordinator with the custom payload {@code needle.range = plan};
 * the planner there answers it by the index (or SAI) as usual, or, when it expects a scan to be
 * fastest, answers with no rows and "client-scan", and this class runs its {@link TokenRangeScan}.
 * That scan reads 8 splits at a time straight from their nodes, where a paged query's scan at the
 * coordinator reads about one page's worth of splits at a time: on long ranges the difference
 * between the two is what a plain CQL query cannot close. A scan's rows and time are reported
 * with the next query, so that the planner learns what this client's scans cost.
 *
 * <p>A coordinator without Needle's query handler ignores the payload and answers the query
 * itself; the answer is then taken as it comes. Thread-safe; one instance serves many queries.
 */
public final class RangeQuery {
    /** Request payload key with the strategy asked for; {@code plan} here. */
    public static final String STRATEGY_PAYLOAD = "needle.range";
    /** Response payload key: the strategy that answered ({@code index}, {@code sai}, {@code scan}, {@code client-scan}). */
    public static final String PLAN_PAYLOAD = "needle.range.plan";
    /** Response payload key: the rows the planner expected over the whole range. */
    public static final String ESTIMATE_PAYLOAD = "needle.range.estimate";
    /** Request payload key: this client's last scan, {@code "rows,ms"}. */
    public static final String CLIENT_SCAN_PAYLOAD = "needle.range.client_scan";

    private static final String CLIENT_SCAN = "client-scan";
    private static final ByteBuffer PLAN = utf8("plan");

    private final TokenRangeScan scan;
    private final PreparedStatement query;
    /** The last scan this client ran and has not reported yet, {@code "rows,ms"}. */
    private final AtomicReference<String> unreported = new AtomicReference<>();

    private RangeQuery(TokenRangeScan scan) {
        this.scan = scan;
        this.query = scan.session().prepare(scan.rangeSelect());
    }

    /**
     * Range queries planned by Needle on the table, column and settings of {@code scan} (its
     * consistency level, page size and timeout apply to the index's answers too). Prepares one
     * statement; fails with the coordinator's error if the column has neither Needle's ordered
     * index nor SAI (the query would need {@code ALLOW FILTERING}: use the scan alone).
     */
    public static RangeQuery planned(TokenRangeScan scan) {
        return new RangeQuery(scan);
    }

    /**
     * One answer: the rows in the column's order, the strategy that produced them ({@code index},
     * {@code sai}, {@code scan} or {@code client-scan}; {@code unplanned} from a coordinator
     * without Needle), and the rows the planner expected (NaN if it had no estimate).
     */
    public record Answer(List<Row> rows, String strategy, double estimate) {}

    /**
     * The rows whose column is at least {@code fromInclusive} and less than {@code toExclusive},
     * in the column's order, as the planner chose to find them.
     *
     * @throws RangeScanException when the client's scan fails (naming the split); a failed
     *     request to the coordinator throws the driver's exception
     */
    public Answer between(Object fromInclusive, Object toExclusive) {
        String report = unreported.getAndSet(null);
        Map<String, ByteBuffer> payload = report == null
                ? Map.of(STRATEGY_PAYLOAD, PLAN)
                : Map.of(STRATEGY_PAYLOAD, PLAN, CLIENT_SCAN_PAYLOAD, utf8(report));
        ResultSet first = scan.session()
                .execute(query.bind(fromInclusive, toExclusive)
                        .setConsistencyLevel(scan.consistency())
                        .setPageSize(scan.pageSize())
                        .setTimeout(scan.timeout())
                        .setCustomPayload(payload));
        Map<String, ByteBuffer> plan = first.getExecutionInfo().getIncomingPayload();
        String strategy = plan.containsKey(PLAN_PAYLOAD) ? text(plan.get(PLAN_PAYLOAD)) : "unplanned";
        double estimate = estimate(plan.get(ESTIMATE_PAYLOAD));
        if (strategy.equals(CLIENT_SCAN)) {
            long t0 = System.nanoTime();
            List<Row> rows = scan.between(fromInclusive, toExclusive);
            unreported.set(String.format(Locale.ROOT, "%d,%.3f", rows.size(), (System.nanoTime() - t0) / 1e6));
            return new Answer(rows, strategy, estimate);
        }
        List<Row> rows = new ArrayList<>();
        for (Row r : first) { // the driver fetches the later pages, which go on the way the first went
            rows.add(r);
        }
        return new Answer(scan.inColumnOrder(rows), strategy, estimate);
    }

    private static double estimate(ByteBuffer b) {
        if (b == null) {
            return Double.NaN;
        }
        try {
            return Double.parseDouble(text(b));
        } catch (NumberFormatException e) {
            return Double.NaN; // "unknown": the index was not ready
        }
    }

    private static String text(ByteBuffer b) {
        return StandardCharsets.UTF_8.decode(b.duplicate()).toString();
    }

    private static ByteBuffer utf8(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }
}
