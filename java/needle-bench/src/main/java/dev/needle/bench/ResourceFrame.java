package dev.needle.bench;

import java.io.IOException;
import java.io.PrintStream;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The {@code resources} section of a run's results, for experiments that sample what the nodes
 * spend ({@link Resources}): the timeline of every phase, framed by idle periods whose cost is the
 * baseline: one before the first measured point (the cluster at rest after the load), then, after
 * the last, one with the Needle indexes (node filters publish heartbeats) and one after dropping
 * them (the cluster as stock Cassandra would be).
 */
final class ResourceFrame implements AutoCloseable {
    private final Experiment.ResourceSampling sampling;
    private final Resources resources;
    private final PrintStream log;
    private final Map<String, Object> doc = new LinkedHashMap<>();
    private boolean started;

    ResourceFrame(Experiment.ResourceSampling sampling, Resources resources, PrintStream log) {
        this.sampling = sampling;
        this.resources = resources;
        this.log = log;
    }

    Resources resources() {
        return resources;
    }

    /** Whether the timeline started ({@link #startOnce}). */
    boolean started() {
        return started;
    }

    /** The section as the result file holds it. */
    Map<String, Object> document() {
        return doc;
    }

    /**
     * Starts the timeline with the idle period before the first measured point; returns whether
     * it started now (false once started).
     */
    boolean startOnce() throws IOException {
        if (started) {
            return false;
        }
        started = true;
        doc.put("interval_s", sampling.intervalS());
        doc.put("clock", "seconds since the timeline started");
        doc.put("timeline", List.of());
        resources.phase("idle before");
        resources.startTimeline(sampling.intervalS());
        doc.put("idle_before", idlePeriod("idle before", sampling.idleBeforeS()));
        return true;
    }

    /**
     * After a measured point: the timeline up to date, the time until the next point labelled,
     * and the cluster settled (memtables flushed, compactions done). What one point's load left
     * behind is not the next point's cost: unsettled, it lands in whichever variant's rounds run
     * first (in two runs of Tables 10-13, Needle-Cuckoo's first round at 250 inserts/s took 159 %
     * of a core against stock's 119 and 120, its last round within 7 % of stock's).
     */
    void afterPoint(BenchCluster nodes, String keyspace) throws IOException {
        resources.phase("between points");
        nodes.settle(keyspace, true, false);
        doc.put("timeline", resources.timeline());
    }

    /**
     * The idle periods after the last point: with the Needle indexes of {@code variants}, the
     * memory their node-filter copies hold (with {@code nodeFilters}), then after dropping the
     * indexes.
     */
    void idleAfter(BenchCluster nodes, String keyspace, List<Variant> variants, boolean nodeFilters)
            throws IOException {
        double seconds = sampling.idleAfterS();
        // What the load left behind (memtables, compactions) is not the node filters' cost at rest.
        resources.phase("settling");
        nodes.settle(keyspace, true, false);
        BenchCluster.sleep(15_000);
        doc.put("idle_after_with_needle", idlePeriod("idle, Needle indexes", seconds));
        Map<String, Resources.CopyMemory> memory = new LinkedHashMap<>();
        for (Variant v : variants) {
            if (v.needle() && nodeFilters) {
                memory.put(v.name(), resources.copyMemory(keyspace, v.table()));
            }
        }
        if (!memory.isEmpty()) {
            doc.put("node_filter_copy_memory", memory);
        }
        for (Variant v : variants) {
            if (v.needle()) {
                log.println("dropping the Needle index of " + v.table());
                nodes.ddl("DROP INDEX " + keyspace + "." + v.table() + "_needle");
            }
        }
        resources.phase("settling");
        BenchCluster.sleep(15_000); // the indexes unregister on every node
        doc.put("idle_after_indexes_dropped", idlePeriod("idle, Needle indexes dropped", seconds));
        doc.put("timeline", resources.timeline());
    }

    /** An idle period of {@code seconds} under {@code label}: what it cost, per second. */
    private Map<String, Object> idlePeriod(String label, double seconds) throws IOException {
        log.printf("%s: the cluster idle for %.0f s (sampling every %.1f s)%n", label, seconds, sampling.intervalS());
        resources.phase(label);
        Resources.Reading a = resources.read();
        BenchCluster.sleep(Math.round(seconds * 1000));
        return resources.totals(resources.read().minus(a), 0);
    }

    @Override
    public void close() {
        resources.close();
    }
}
