package dev.needle.cassandra.range;

import java.util.EnumMap;
import java.util.Map;
import java.util.Set;

/**
 * Chooses how to answer one range query (docs/range-queries.md, "the planner"): the parallel scan,
 * Cassandra's SAI on the column, or the ordered index, whichever its cost model expects to be
 * fastest for the estimated rows; then learns from the latency the query really had. Every
 * {@code exploreEvery}-th decision tries the least-observed strategy among those expected within
 * {@code exploreWithin} times the best, so that a model that drifted near a crossover is corrected
 * rather than trusted forever. Thread-safe.
 */
public final class RangePlanner {
    /** The ways to answer a range query. */
    public enum Strategy {
        /** The coordinator's parallel scan of every node. */
        SCAN,
        /** Cassandra's SAI on the column. */
        SAI,
        /** Needle's ordered index. */
        INDEX,
        /** The client's own parallel scan, when it asked for a plan (see RangePayload). */
        CLIENT_SCAN;

        /** The strategy's name in tracing, views and payloads: "scan", "sai", "index", "client-scan". */
        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
        }
    }

    /**
     * One decision, with what it was based on: the tracing line of a query.
     *
     * @param strategy  the chosen strategy
     * @param estimate  the rows the query was expected to return
     * @param predicted the latency each available strategy was expected to take
     * @param explored  chosen to correct the model, not because it was expected fastest
     */
    public record Decision(Strategy strategy, double estimate, Map<Strategy, Double> predicted, boolean explored) {
        /** For tracing: "index for ~120 rows (expected: scan 540.0 sai 22.0 index 3.1 ms)". */
        public String describe() {
            StringBuilder b = new StringBuilder(strategy.label())
                    .append(String.format(" for ~%.0f rows", estimate))
                    .append(explored ? ", exploring" : "")
                    .append(" (expected:");
            predicted.forEach((s, ms) -> b.append(String.format(" %s %.1f", s.label(), ms)));
            return b.append(" ms)").toString();
        }
    }

    private final Map<Strategy, CostModel> models = new EnumMap<>(Strategy.class);
    private final int exploreEvery;
    private final double exploreWithin;
    private long decisions;

    /**
     * @param calibration   per strategy, {fixed ms, ms per row}, as measured on the cluster
     * @param priorWeight   how many observed queries the calibration is worth
     * @param exploreEvery  every this many decisions one explores (0: never)
     * @param exploreWithin only strategies expected within this factor of the best are explored
     */
    public RangePlanner(
            Map<Strategy, double[]> calibration, double priorWeight, int exploreEvery, double exploreWithin) {
        calibration.forEach((s, c) -> models.put(s, new CostModel(c[0], c[1], priorWeight)));
        this.exploreEvery = exploreEvery;
        this.exploreWithin = exploreWithin;
    }

    /** The strategy for a query expected to return {@code estimate} rows, among {@code available}. */
    public synchronized Decision choose(double estimate, Set<Strategy> available) {
        Map<Strategy, Double> predicted = new EnumMap<>(Strategy.class);
        Strategy best = null;
        for (Strategy s : available) {
            CostModel m = models.get(s);
            if (m == null) {
                throw new IllegalArgumentException("no calibration for " + s);
            }
            double p = m.predict(estimate);
            predicted.put(s, p);
            if (best == null || p < predicted.get(best)) {
                best = s;
            }
        }
        if (best == null) {
            throw new IllegalArgumentException("no strategy available");
        }
        decisions++;
        if (exploreEvery > 0 && decisions % exploreEvery == 0) {
            Strategy least = null;
            for (Strategy s : available) {
                if (s != best
                        && predicted.get(s) <= exploreWithin * predicted.get(best)
                        && (least == null
                                || models.get(s).observations()
                                        < models.get(least).observations())) {
                    least = s;
                }
            }
            if (least != null) {
                return new Decision(least, estimate, predicted, true);
            }
        }
        return new Decision(best, estimate, predicted, false);
    }

    /** Takes the latency (ms) of a query that returned {@code rows} rows with {@code strategy}. */
    public synchronized void observe(Strategy strategy, double rows, double latencyMs) {
        models.get(strategy).observe(rows, latencyMs);
    }

    /**
     * The strategy a query answered by the index should start again with, or null to go on: it
     * has returned {@code rowsSoFar}, more than {@code overrun} times its estimate, and the
     * cheapest of {@code stockWays} over the whole range is now expected to finish sooner than the
     * index's remaining rows, estimated as many again as it has returned.
     */
    public synchronized Strategy switchTo(Decision d, Set<Strategy> stockWays, double rowsSoFar, double overrun) {
        if (d.strategy() != Strategy.INDEX || rowsSoFar <= overrun * d.estimate()) {
            return null;
        }
        Strategy stock = cheapest(2 * rowsSoFar, stockWays);
        double remaining = models.get(Strategy.INDEX).perRow() * rowsSoFar;
        return stock != null && models.get(stock).predict(2 * rowsSoFar) < remaining ? stock : null;
    }

    /**
     * The strategy among {@code available} that the models expect fastest for {@code rows} rows
     * (null if none has a model). Not a decision: it neither explores nor counts.
     */
    public synchronized Strategy cheapest(double rows, Set<Strategy> available) {
        Strategy best = null;
        double bestMs = Double.MAX_VALUE;
        for (Strategy s : available) {
            CostModel m = models.get(s);
            double ms = m == null ? Double.MAX_VALUE : m.predict(rows);
            if (ms < bestMs) {
                best = s;
                bestMs = ms;
            }
        }
        return best;
    }

    /** How many queries of a strategy the model has observed (its calibration not counted). */
    public synchronized long observations(Strategy s) {
        CostModel m = models.get(s);
        return m == null ? 0 : m.observations();
    }

    /** The current model of a strategy: {fixed ms, ms per row}. */
    public synchronized double[] coefficients(Strategy s) {
        CostModel m = models.get(s);
        return new double[] {m.fixed(), m.perRow()};
    }
}
