package dev.needle.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;

/**
 * The document a range experiment ({@link RangeBench}) writes to {@code results.json}: the
 * experiment's setting, then per mix each variant's latency and the planner's ratios, the
 * client-concurrency points and the writes.
 */
public record RangeResult(
        String name,
        String title,
        String reproduces,
        String command,
        String started,
        int rows,
        int nodes,
        int replicationFactor,
        String consistency,
        double zipf,
        double loadSeconds,
        Map<String, Integer> leaves,
        List<MixResult> mixes,
        List<ClientsResult> clients,
        List<WriteResult> writes) {

    /** The latency of one variant over a mix's measured queries, in milliseconds. */
    public record Stats(double medianMs, double meanMs, double p90Ms, double minMs, double maxMs) {
        static Stats of(Histogram h) {
            return new Stats(
                    h.getValueAtPercentile(50) / 1e6,
                    h.getMean() / 1e6,
                    h.getValueAtPercentile(90) / 1e6,
                    h.getMinValue() / 1e6,
                    h.getMaxValue() / 1e6);
        }
    }

    /**
     * One mix: its measured queries, the rows they returned on average, each variant's latency,
     * the planner's median as a ratio of each other variant's (and of the best of the stock ones,
     * "scan" and "sai", under "best_stock", and of the best of all under "best"; empty without
     * "hybrid"), what the planner chose for the measured queries (as the coordinator's {@code
     * needle_views.range_plans} shows: strategy, and why if not by its model), the same two for
     * the planner from the client ("hybrid-client": ratios of its median, and the strategies its
     * answers reported), and the queries whose answers differed between variants.
     */
    public record MixResult(
            String label,
            double minLength,
            double maxLength,
            int queries,
            double rowsMean,
            Map<String, Stats> variants,
            Map<String, Double> plannerVs,
            Map<String, Integer> plannerChose,
            Map<String, Double> clientPlannerVs,
            Map<String, Integer> clientPlannerChose,
            int wrongResults) {}

    /** The planner's median over each other variant's, and over the best stock and the best of all. */
    static Map<String, Double> plannerRatios(Map<String, Stats> variants, String plannerVariant) {
        Map<String, Double> out = new LinkedHashMap<>();
        Stats planner = variants.get(plannerVariant);
        if (planner == null) {
            return out;
        }
        double bestStock = Double.MAX_VALUE;
        double best = Double.MAX_VALUE;
        for (Map.Entry<String, Stats> v : variants.entrySet()) {
            if (v.getKey().startsWith("hybrid")) { // a planner is measured against strategies, not planners
                continue;
            }
            double median = v.getValue().medianMs();
            out.put(v.getKey(), planner.medianMs() / median);
            best = Math.min(best, median);
            if (v.getKey().equals("scan") || v.getKey().equals("sai")) {
                bestStock = Math.min(bestStock, median);
            }
        }
        if (bestStock < Double.MAX_VALUE) {
            out.put("best_stock", planner.medianMs() / bestStock);
        }
        if (best < Double.MAX_VALUE) {
            out.put("best", planner.medianMs() / best);
        }
        return out;
    }

    /**
     * One point of the client-concurrency phase: {@code queries} queries of a mix answered by one
     * variant from {@code threads} threads at once; the queries answered per second, each query's
     * latency, and the queries whose answers differed between the variants at this point.
     */
    public record ClientsResult(
            String mix,
            int threads,
            String variant,
            int queries,
            double queriesPerSecond,
            Stats latency,
            int wrongResults) {}

    /**
     * The latency of single writes to one table (the dissertation's Table 2.4): inserts of new
     * rows and updates of the key of existing rows, one at a time, in a random table order per write.
     */
    public record WriteResult(String table, String index, int writes, Stats insert, Stats update) {}

    /** One line of the printed table: each variant's median and mean. */
    static String line(MixResult m) {
        StringBuilder b = new StringBuilder(String.format("  %-34s %10.0f rows", m.label(), m.rowsMean()));
        m.variants()
                .forEach((v, st) ->
                        b.append(String.format("  %s median %9.1f ms mean %9.1f ms", v, st.medianMs(), st.meanMs())));
        if (!m.plannerChose().isEmpty()) {
            b.append("  planner chose ").append(m.plannerChose());
        }
        if (!m.clientPlannerChose().isEmpty()) {
            b.append("  planner chose for the client ").append(m.clientPlannerChose());
        }
        if (m.wrongResults() > 0) {
            b.append("  WRONG RESULTS: ").append(m.wrongResults());
        }
        return b.toString();
    }
}
