package dev.needle.bench;

import com.datastax.oss.driver.api.core.CqlSession;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import org.HdrHistogram.Histogram;

/**
 * The request floor: the latency of a request the coordinator answers from memory alone, with no
 * table behind it. No lookup the coordinator answers without reading can be faster, so results
 * state it beside the lookups they measure.
 *
 * @param query   the request measured
 * @param latency its latency (the fields at the top level; no histogram)
 */
public record RequestFloor(String query, @JsonUnwrapped LatencyStats latency) {
    /**
     * One row of a virtual table. ({@code system.local} is a real table; reading it costs about a
     * millisecond, more than a skipped lookup.)
     */
    static final String QUERY =
            "SELECT keyspace_name FROM system_virtual_schema.keyspaces WHERE keyspace_name = 'system'";

    /** Measures {@code n} requests through {@code session}. */
    static RequestFloor measure(CqlSession session, int n) {
        long t = System.nanoTime();
        Histogram h = latencies(session, n);
        return new RequestFloor(QUERY, LatencyStats.of(h, System.nanoTime() - t).withoutHistogram());
    }

    /** The latencies of {@code n} executions of {@link #QUERY} through {@code session}. */
    static Histogram latencies(CqlSession session, int n) {
        var local = session.prepare(QUERY);
        Histogram h = ClosedLoop.newHistogram();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            session.execute(local.bind());
            h.recordValue(System.nanoTime() - t0);
        }
        return h;
    }
}
