package dev.needle.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.LongConsumer;
import org.HdrHistogram.Histogram;

/**
 * Measures one point of an experiment: a warm-up, then rounds in which every variant runs the
 * same operations once, in an order that rotates from round to round, so that a disturbance of
 * the shared machine falls on all variants alike. Needle's counters are read before and after,
 * and what the nodes spent while each variant ran, when the experiment samples it.
 */
final class Rounds {
    private final Experiment e;
    private final List<Variant> variants;
    private final String keyspace;
    private final boolean nodeFilters;
    private final BenchCluster nodes;
    private final Resources resources;
    private final PrintStream log;

    /**
     * @param nodeFilters whether the Needle variants carry node filters (their counters are read)
     * @param resources   the nodes' resource sampler; null if the experiment does not sample them
     */
    Rounds(
            Experiment e,
            List<Variant> variants,
            String keyspace,
            boolean nodeFilters,
            BenchCluster nodes,
            Resources resources,
            PrintStream log) {
        this.e = e;
        this.variants = variants;
        this.keyspace = keyspace;
        this.nodeFilters = nodeFilters;
        this.nodes = nodes;
        this.resources = resources;
        this.log = log;
    }

    /** What a point measured: each variant's result and the warm-up's length. */
    record Measured(long warmupOpsPerVariant, Map<String, VariantResult> variants) {
        /** The point's entry in the results, with the setting of a lookup or an insert point. */
        PointResult result(Experiment.Point p, String cache, PointResult.Lookup lookup, PointResult.Insert insert) {
            return new PointResult(
                    p.label(),
                    p.x(),
                    cache,
                    warmupOpsPerVariant,
                    variants,
                    PointResult.StockRatios.of(variants),
                    lookup,
                    insert);
        }
    }

    /**
     * Runs {@code ops} (one per variant) at point {@code p}: the warm-up, then the experiment's
     * rounds; {@code afterWarmup} (given the warm-up's operation count) and {@code afterRound} let
     * inserts move to fresh keys.
     */
    Measured measure(
            String where,
            String cache,
            ClosedLoop.Op[] ops,
            Experiment.Point p,
            Runnable afterRound,
            LongConsumer afterWarmup)
            throws IOException {
        Experiment.Run r = e.run();
        int n = variants.size();
        long warmup = (long) Math.ceil(r.warmupFraction() * r.opsPerRound() * r.rounds());
        long total = (warmup + (long) r.opsPerRound() * r.rounds()) * n;
        Histogram[] hist = new Histogram[n];
        long[] wrong = new long[n];
        long[] nanos = new long[n];
        NeedleCounters.Lookups[] needleBefore = new NeedleCounters.Lookups[n];
        NeedleCounters.Sync[] syncBefore = new NeedleCounters.Sync[n];
        long seed = KeyChooser.mix64(e.seed() ^ where.hashCode());
        Resources.Reading[] used = new Resources.Reading[n];
        try (Progress pr = new Progress(where, total, e.isInsert() ? "inserts" : "lookups")) {
            if (resources != null) {
                resources.phase("warm-up");
            }
            if (warmup > 0) {
                for (int v = 0; v < n; v++) {
                    ClosedLoop.run(r.threads(), warmup, seed - 1, ops[v], pr.done, p.rate());
                }
                // Inserts warm up on keys of their own: the measured ones must be new.
                afterWarmup.accept(warmup);
            }
            for (int v = 0; v < n; v++) {
                hist[v] = ClosedLoop.newHistogram();
                needleBefore[v] = lookupCounters(variants.get(v));
                syncBefore[v] = syncCounters(variants.get(v));
            }
            for (int round = 0; round < r.rounds(); round++) {
                for (int k = 0; k < n; k++) {
                    int v = (round + k) % n;
                    if (cache.equals("cold")) {
                        nodes.dropCaches();
                    }
                    Resources.Reading before = null;
                    if (resources != null) {
                        resources.phase(variants.get(v).name());
                        before = resources.read();
                    }
                    ClosedLoop.Outcome o =
                            ClosedLoop.run(r.threads(), r.opsPerRound(), seed + round, ops[v], pr.done, p.rate());
                    if (resources != null) {
                        used[v] = resources.read().minus(before).plus(used[v]);
                    }
                    hist[v].add(o.histogram());
                    wrong[v] += o.wrong();
                    nanos[v] += o.nanos();
                }
                afterRound.run();
            }
        }
        Map<String, VariantResult> byVariant = new LinkedHashMap<>();
        for (int v = 0; v < n; v++) {
            Variant variant = variants.get(v);
            NeedleCounters.Lookups needle = lookupCounters(variant);
            NeedleCounters.Sync sync = syncCounters(variant);
            byVariant.put(
                    variant.name(),
                    new VariantResult(
                            LatencyStats.of(hist[v], nanos[v]),
                            wrong[v],
                            used[v] == null ? null : resources.totals(used[v], hist[v].getTotalCount()),
                            needle == null ? null : needle.since(needleBefore[v]),
                            sync == null ? null : sync.since(syncBefore[v])));
            if (wrong[v] > 0) {
                log.printf(
                        "WRONG RESULTS: %s returned wrong row counts for %,d operations at %s%n",
                        variant.name(), wrong[v], where);
            }
        }
        log.println(Report.line(where, byVariant));
        return new Measured(warmup, byVariant);
    }

    /**
     * The coordinators' lookup counters of a Needle variant's table: node 1's, or the sums over
     * every node when the driver routes each request to a replica of its key; null for stock.
     */
    private NeedleCounters.Lookups lookupCounters(Variant v) throws IOException {
        if (!v.needle()) {
            return null;
        }
        int coordinators = e.run().coordinator().equals("token-aware") ? nodes.size() : 1;
        return NeedleCounters.Lookups.read(nodes.nodes(), coordinators, keyspace, v.table(), nodeFilters);
    }

    /** What a Needle variant's node filters sent, over every node; null for stock or without node filters. */
    private NeedleCounters.Sync syncCounters(Variant v) throws IOException {
        return v.needle() && nodeFilters
                ? NeedleCounters.Sync.read(nodes.nodes(), nodes.size(), keyspace, v.table())
                : null;
    }
}
