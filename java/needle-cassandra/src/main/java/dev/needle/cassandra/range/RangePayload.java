package dev.needle.cassandra.range;

import dev.needle.cassandra.range.RangePlanner.Strategy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.Set;
import org.apache.cassandra.exceptions.InvalidRequestException;

/**
 * The custom payload of range queries: what a request may ask for, and what a {@code plan}
 * answer tells the client. The client library ({@code dev.needle.range.RangeQuery}) names the
 * same keys.
 */
public final class RangePayload {
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

    private static final Set<String> STRATEGIES = Set.of("index", "stock", "scan", "plan", "switch");

    private RangePayload() {}

    /** What the payload asks for ({@code index}, {@code scan}, {@code stock}, {@code plan} or {@code switch}), or null. */
    static String asked(Map<String, ByteBuffer> payload) {
        if (payload == null || !payload.containsKey(STRATEGY_PAYLOAD)) {
            return null;
        }
        String asked = text(payload.get(STRATEGY_PAYLOAD));
        if (!STRATEGIES.contains(asked)) {
            throw new InvalidRequestException("custom payload " + STRATEGY_PAYLOAD
                    + " must be 'index', 'scan', 'stock', 'plan' or 'switch', not '" + asked + "'");
        }
        return asked;
    }

    /** The client's report of its last scan, {rows, ms}, or null if the payload has none. */
    static double[] clientScan(Map<String, ByteBuffer> payload) {
        if (payload == null || !payload.containsKey(CLIENT_SCAN_PAYLOAD)) {
            return null;
        }
        String s = text(payload.get(CLIENT_SCAN_PAYLOAD));
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

    /** The response payload of a {@code plan} request: the strategy that answered and the rows expected. */
    static Map<String, ByteBuffer> plan(Strategy answered, double estimate) {
        return Map.of(
                PLAN_PAYLOAD, utf8(answered.label()),
                ESTIMATE_PAYLOAD, utf8(Double.isNaN(estimate) ? "unknown" : Long.toString(Math.round(estimate))));
    }

    private static ByteBuffer utf8(String s) {
        return ByteBuffer.wrap(s.getBytes(StandardCharsets.UTF_8));
    }

    private static String text(ByteBuffer b) {
        return StandardCharsets.UTF_8.decode(b.duplicate()).toString();
    }
}
