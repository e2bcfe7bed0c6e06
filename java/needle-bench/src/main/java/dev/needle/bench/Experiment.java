package dev.needle.bench;

import java.nio.file.Path;
import java.util.List;
import java.util.Map;

/**
 * One experiment: a data set, the phases that build it, and the measured points. Read from a JSON
 * file under {@code bench/experiments/}; every field is described in docs/harness.md. Unknown fields
 * are errors, so a typo never silently runs the default.
 *
 * @param name       short name; results go to {@code bench/results/<name>/}
 * @param title      what the experiment measures, for reports and charts
 * @param reproduces the published table it reproduces, if any
 * @param variants   the tables measured side by side (see {@link Variant})
 * @param dataset    the data loaded before the points are measured
 * @param load       how the data is loaded, deleted, flushed and compacted
 * @param deleteModes how deleted partitions are deleted: "partition", "row" (row by row), or "none"
 * @param caches     "warm" and/or "cold" (page cache dropped and key cache emptied before every round)
 * @param run        how each point is measured
 * @param points     the measured points (the rows of the published table)
 * @param seed       seed of every random choice; the same seed gives the same data and key sequence
 * @param cluster    the cluster the experiment runs on (null: one node, no emulated latency)
 * @param indexOptions options added to the Needle variants' index (e.g. {"node_filter": "one"}); null: none
 * @param resources  what the nodes spend (CPU, internode and node-filter bytes), sampled through the
 *     measured rounds and idle periods around them; null: not measured
 */
public record Experiment(
        String name,
        String title,
        String reproduces,
        List<String> variants,
        DataSet dataset,
        Load load,
        List<String> deleteModes,
        List<String> caches,
        Run run,
        List<Point> points,
        long seed,
        Cluster cluster,
        Map<String, String> indexOptions,
        ResourceSampling resources) {

    /**
     * @param partitions       partitions written; several values make a growing series (one run per size)
     * @param rowsPerPartition rows per partition
     * @param rowBytes         bytes of the value column of each row
     * @param deletedFraction  fraction of the written partitions deleted after the load
     */
    public record DataSet(List<Integer> partitions, int rowsPerPartition, int rowBytes, double deletedFraction) {}

    /**
     * @param threads            client threads of the load and delete phases
     * @param flushAfterLoad     flush memtables after the load (data in SSTables)
     * @param compactAfterLoad   major compaction after the load: every table gets the same SSTable layout
     * @param flushAfterDelete   flush after the delete phase (tombstones in their own SSTables)
     * @param compactAfterDelete major compaction after the delete phase
     */
    public record Load(
            int threads,
            boolean flushAfterLoad,
            boolean compactAfterLoad,
            boolean flushAfterDelete,
            boolean compactAfterDelete) {}

    /**
     * @param op             "lookup" (SELECT of a whole partition) or "insert" (a new partition)
     * @param threads        closed-loop client threads
     * @param distribution   key choice within a pool: "uniform", "zipf-clustered", "zipf-scattered"
     * @param opsPerRound    operations per variant per round
     * @param rounds         rounds; each round runs every variant once, in rotating order
     * @param warmupFraction warm-up operations per variant before the rounds, as a fraction of the measured ones
     * @param coordinator    "fixed" (every request to node 1) or "token-aware"
     * @param consistency    consistency level of every request, e.g. "ONE"
     */
    public record Run(
            String op,
            int threads,
            String distribution,
            int opsPerRound,
            int rounds,
            double warmupFraction,
            String coordinator,
            String consistency) {}

    /**
     * @param label  the row label of the published table (e.g. "25%")
     * @param x      the point's value on the chart's x axis
     * @param mix    for lookups: fraction of lookups per key pool ("live", "deleted", "absent"), summing to 1
     * @param load   for inserts: data already written before the measured inserts, as a fraction of the data set
     * @param remote for lookups on several nodes: the fraction of lookups of keys node 1 (the coordinator)
     *     holds no replica of; null: keys are drawn whatever their owner
     * @param rate   for inserts: operations per second, all threads together (every variant does the
     *     same work per second, so what the nodes spend compares directly); null: as fast as they go
     */
    public record Point(String label, double x, Map<String, Double> mix, Double load, Double remote, Double rate) {}

    /**
     * @param nodes             Cassandra nodes, on 127.0.0.1 to 127.0.0.N
     * @param latency           emulated one-way internode latency, a profile of the cluster tool's
     *     {@code --latency} (raw, lan, az, wan, fixed:MS); null: none (loopback)
     * @param replicationFactor replication factor of the keyspace; null: every node holds every key
     */
    public record Cluster(int nodes, String latency, Integer replicationFactor) {
        /** The replication factor the keyspace is created with. */
        public int replication() {
            return replicationFactor == null ? nodes : replicationFactor;
        }
    }

    /**
     * @param intervalS   seconds between the samples of the timeline
     * @param idleBeforeS an idle period sampled before the first point (the cluster at rest)
     * @param idleAfterS  idle periods sampled after the last point: one with the Needle indexes, then
     *     one after they are dropped (what node filters cost at rest, side by side)
     */
    public record ResourceSampling(double intervalS, double idleBeforeS, double idleAfterS) {}

    /** The cluster of this experiment (one node without emulated latency when the file names none). */
    public Cluster clusterOrDefault() {
        return cluster == null ? new Cluster(1, null, null) : cluster;
    }

    /** This experiment on {@code c} instead of its own cluster (a latency profile given on the command line). */
    public Experiment on(Cluster c) {
        return with(dataset, caches, run, c);
    }

    /** A copy of this experiment with another data set, cache states, run and cluster. */
    private Experiment with(DataSet d, List<String> cacheStates, Run r, Cluster c) {
        return new Experiment(
                name,
                title,
                reproduces,
                variants,
                d,
                load,
                deleteModes,
                cacheStates,
                r,
                points,
                seed,
                c,
                indexOptions,
                resources);
    }

    /** Reads and checks an experiment file; any problem is an {@link IllegalArgumentException} naming the file. */
    public static Experiment read(Path file) {
        Experiment e = ExperimentFiles.read(file, Experiment.class);
        try {
            e.validate();
        } catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException(file + ": " + ex.getMessage());
        }
        ExperimentFiles.checkName(file, e.name());
        return e;
    }

    /** This experiment with the data set and the operation counts multiplied by {@code f} (for quick runs). */
    public Experiment scaled(double f) {
        if (!(f > 0)) {
            throw new IllegalArgumentException("scale must be > 0, got " + f);
        }
        List<Integer> parts = dataset.partitions.stream()
                .map(p -> Math.max(10, (int) Math.round(p * f)))
                .toList();
        Run r = new Run(
                run.op,
                run.threads,
                run.distribution,
                Math.max(10, (int) Math.round(run.opsPerRound * f)),
                run.rounds,
                run.warmupFraction,
                run.coordinator,
                run.consistency);
        return with(
                new DataSet(parts, dataset.rowsPerPartition, dataset.rowBytes, dataset.deletedFraction),
                caches,
                r,
                cluster);
    }

    /** This experiment without its cold-cache runs. */
    public Experiment warmOnly() {
        return with(dataset, List.of("warm"), run, cluster);
    }

    /** The experiment as JSON (written into every result file). */
    public Object asJson() {
        return ExperimentFiles.JSON.convertValue(this, Map.class);
    }

    boolean isInsert() {
        return run.op.equals("insert");
    }

    void validate() {
        require(
                name != null && name.matches("[a-z0-9][a-z0-9-]*"),
                "'name' must be lower-case letters, digits and dashes");
        require(variants != null && !variants.isEmpty(), "'variants' must name at least one of " + Variant.NAMES);
        variants.forEach(Variant::of);
        require(variants.stream().distinct().count() == variants.size(), "'variants' repeats a name");
        require(dataset != null, "'dataset' is missing");
        require(dataset.partitions != null && !dataset.partitions.isEmpty(), "'dataset.partitions' is missing");
        for (int i = 0; i < dataset.partitions.size(); i++) {
            require(dataset.partitions.get(i) > 0, "'dataset.partitions' must be > 0");
            require(
                    i == 0 || dataset.partitions.get(i) > dataset.partitions.get(i - 1),
                    "'dataset.partitions' must grow (the data of one size is kept for the next)");
        }
        require(dataset.rowsPerPartition >= 1, "'dataset.rows_per_partition' must be >= 1");
        require(dataset.rowBytes >= 0 && dataset.rowBytes <= 1 << 20, "'dataset.row_bytes' must be 0..1048576");
        require(
                dataset.deletedFraction >= 0 && dataset.deletedFraction <= 1,
                "'dataset.deleted_fraction' must be in [0, 1]");
        require(load != null && load.threads >= 1, "'load.threads' must be >= 1");
        require(deleteModes != null && !deleteModes.isEmpty(), "'delete_modes' is missing");
        for (String m : deleteModes) {
            require(
                    List.of("partition", "row", "none").contains(m),
                    "delete mode '" + m + "' is not one of partition, row, none");
        }
        require(caches != null && !caches.isEmpty(), "'caches' is missing");
        for (String c : caches) {
            require(c.equals("warm") || c.equals("cold"), "cache '" + c + "' is not warm or cold");
        }
        require(run != null, "'run' is missing");
        require(
                run.op != null && (run.op.equals("lookup") || run.op.equals("insert")),
                "'run.op' must be lookup or insert");
        require(run.threads >= 1, "'run.threads' must be >= 1");
        KeyChooser.Distribution.of(run.distribution);
        require(run.opsPerRound >= 1 && run.rounds >= 1, "'run.ops_per_round' and 'run.rounds' must be >= 1");
        require(run.warmupFraction >= 0, "'run.warmup_fraction' must be >= 0");
        require(
                run.coordinator != null && (run.coordinator.equals("fixed") || run.coordinator.equals("token-aware")),
                "'run.coordinator' must be fixed or token-aware");
        require(run.consistency != null, "'run.consistency' is missing (e.g. ONE)");
        require(points != null && !points.isEmpty(), "'points' is missing");
        Cluster c = clusterOrDefault();
        require(c.nodes >= 1 && c.nodes <= 9, "'cluster.nodes' must be 1 to 9");
        require(
                c.replication() >= 1 && c.replication() <= c.nodes,
                "'cluster.replication_factor' must be 1 to 'cluster.nodes'");
        if (indexOptions != null) {
            for (String k : indexOptions.keySet()) {
                require(
                        !k.equals("filter"),
                        "'index_options' may not set 'filter': each variant sets its own (see 'variants')");
            }
        }
        if (resources != null) {
            require(resources.intervalS >= 0.5, "'resources.interval_s' must be >= 0.5");
            require(
                    resources.idleBeforeS >= 0 && resources.idleAfterS >= 0,
                    "'resources.idle_before_s' and 'resources.idle_after_s' must be >= 0");
            require(
                    c.nodes > 1,
                    "'resources' measures what nodes send each other: it needs a 'cluster' of several nodes");
        }
        double lastLoad = 0;
        for (Point p : points) {
            require(p.label != null, "every point needs a 'label'");
            if (isInsert()) {
                require(
                        p.load != null && p.load >= 0 && p.load <= 1,
                        "insert point '" + p.label + "' needs 'load' in [0, 1]");
                require(p.mix == null, "insert point '" + p.label + "' takes no 'mix'");
                require(p.remote == null, "insert point '" + p.label + "' takes no 'remote'");
                require(p.rate == null || p.rate > 0, "insert point '" + p.label + "': 'rate' must be > 0");
                require(p.load >= lastLoad, "insert points must be ordered by growing 'load' (data is only added)");
                lastLoad = p.load;
            } else {
                require(p.mix != null && !p.mix.isEmpty(), "lookup point '" + p.label + "' needs a 'mix'");
                double sum = 0;
                for (Map.Entry<String, Double> m : p.mix.entrySet()) {
                    require(
                            POOLS.contains(m.getKey()),
                            "point '" + p.label + "': pool '" + m.getKey() + "' is not one of " + POOLS);
                    require(m.getValue() >= 0, "point '" + p.label + "': negative fraction");
                    sum += m.getValue();
                }
                require(Math.abs(sum - 1) < 1e-9, "point '" + p.label + "': the mix sums to " + sum + ", not 1");
                require(
                        !(p.mix.getOrDefault("deleted", 0.0) > 0 && dataset.deletedFraction == 0),
                        "point '" + p.label + "' looks up deleted keys but 'dataset.deleted_fraction' is 0");
                require(
                        !(p.mix.getOrDefault("deleted", 0.0) > 0 && deleteModes.contains("none")),
                        "point '" + p.label + "' looks up deleted keys but 'delete_modes' has none");
                require(p.rate == null, "lookup point '" + p.label + "' takes no 'rate' (inserts only)");
                require(
                        p.remote == null || (p.remote >= 0 && p.remote <= 1),
                        "point '" + p.label + "': 'remote' must be in [0, 1]");
                require(
                        p.remote == null || p.remote == 0 || c.replication() < c.nodes,
                        "point '" + p.label + "' looks up remote keys, but with 'cluster.replication_factor' "
                                + c.replication() + " on " + c.nodes + " nodes node 1 holds every key");
            }
        }
    }

    /** The key pools a lookup mix may name. */
    static final List<String> POOLS = List.of("live", "deleted", "absent");

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
