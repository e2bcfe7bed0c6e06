package dev.needle.bench;

import dev.needle.testhooks.LatencyProfile;
import java.nio.file.Path;

/** The options of one {@code needle-bench staleness} run ({@link StalenessProbe}), from its command line. */
record StalenessOptions(
        int nodes,
        String latency,
        int keys,
        int loadThreads,
        int syncKeys,
        int pacedRate,
        String staleness,
        String heap,
        Path out,
        Path jar,
        Path tool) {
    static final String USAGE = """
            usage: needle-bench staleness [options]
              --nodes N            nodes (default 4)
              --latency PROFILE    emulated internode latency (default lan; raw, lan, az, wan, fixed:MS)
              --keys N             probe keys per phase and table (default 2000)
              --load-threads N     loader threads of the phase under load and of the full-rate sync cost (default 4)
              --sync-keys N        partitions inserted per sync-cost phase (default 20000)
              --paced-rate N       inserts per second of the paced sync-cost phase (default 200)
              --staleness S        the index's bound S (default 1s)
              --heap SIZE          each node's heap (default 1G)
              --out DIR            where staleness.json goes (default bench/results/scheme2)
              --plugin-jar JAR     the Needle plugin (default java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar)
              --cluster-tool PATH  deploy/needle-cluster (default: deploy/needle-cluster)
            """;

    static StalenessOptions parse(String[] args) {
        int nodes = 4, keys = 2000, loadThreads = 4, syncKeys = 20_000, pacedRate = 200;
        String latency = "lan", staleness = "1s", heap = "1G";
        Path out = Path.of("bench/results/scheme2");
        Path jar = Path.of("java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar");
        Path tool = Path.of("deploy/needle-cluster");
        for (int i = 1; i < args.length; i++) {
            String a = args[i];
            if (i + 1 >= args.length) {
                throw new IllegalArgumentException(a + " needs a value");
            }
            String v = args[++i];
            switch (a) {
                case "--nodes" -> nodes = positive(a, v);
                case "--latency" -> latency = v;
                case "--keys" -> keys = positive(a, v);
                case "--load-threads" -> loadThreads = positive(a, v);
                case "--sync-keys" -> syncKeys = positive(a, v);
                case "--paced-rate" -> pacedRate = positive(a, v);
                case "--staleness" -> staleness = v;
                case "--heap" -> heap = v;
                case "--out" -> out = Path.of(v);
                case "--plugin-jar" -> jar = Path.of(v);
                case "--cluster-tool" -> tool = Path.of(v);
                default -> throw new IllegalArgumentException("unknown option " + a);
            }
        }
        if (nodes < 2) {
            throw new IllegalArgumentException(
                    "--nodes must be at least 2 (a key is read through the nodes that do not own it)");
        }
        LatencyProfile.parse(latency); // a bad name fails here, before any node starts
        BenchCluster.parseStaleness(staleness);
        return new StalenessOptions(
                nodes, latency, keys, loadThreads, syncKeys, pacedRate, staleness, heap, out, jar, tool);
    }

    private static int positive(String option, String v) {
        int n;
        try {
            n = Integer.parseInt(v);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(option + " '" + v + "' is not a number");
        }
        if (n <= 0) {
            throw new IllegalArgumentException(option + " must be positive, not " + v);
        }
        return n;
    }
}
