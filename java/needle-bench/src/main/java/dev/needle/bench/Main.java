package dev.needle.bench;

import dev.needle.testkit.LocalCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * {@code needle-bench run EXPERIMENT.json [options]}: starts local Cassandra nodes with the Needle
 * plugin (one, or the experiment's cluster, with its emulated network latency), runs the
 * experiment, writes {@code results.json}, prints the side-by-side table and stops the nodes (also
 * when the run fails). Exit codes: 0 done, 1 the run failed or returned wrong
 * results, 2 bad command line or experiment file.
 */
public final class Main {
    private static final String USAGE = """
            usage: needle-bench run EXPERIMENT.json [options]
                   needle-bench calibrate-latency [options]   (what the emulated network latency adds; --help)
                   needle-bench staleness [options]           (how soon copies hold a new key, sync bytes; --help)
                   needle-bench range EXPERIMENT.json [options]  (range queries: parallel scan, SAI)
              --out DIR            where results.json goes (default bench/results/<name>)
              --plugin-jar JAR     the Needle plugin (default java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar)
              --cluster-tool PATH  deploy/needle-cluster (default: deploy/needle-cluster)
              --cluster-dir DIR    the nodes' folder (default: a new temporary folder; removed at the end)
              --heap SIZE          each node's heap (default 2G on one node, 1G on several)
              --latency PROFILE    emulated internode latency instead of the experiment's (raw, lan, az, wan,
                                   fixed:MS); results go to bench/results/<name>-<profile> unless --out
              --scale F            multiply the data set and the operation counts by F (quick runs)
              --warm-only          skip the cold-cache runs (they need root)
            """;

    /** Set when the JVM is shutting down (Ctrl-C): the requests that fail then are not the run's fault. */
    private static volatile boolean stopping;

    private Main() {}

    public static void main(String[] args) {
        System.exit(run(args));
    }

    static int run(String[] args) {
        if (args.length >= 1 && args[0].equals("calibrate-latency")) {
            return LatencyCalibration.run(args);
        }
        if (args.length >= 1 && args[0].equals("staleness")) {
            return StalenessProbe.run(args);
        }
        if (args.length >= 1 && args[0].equals("range")) {
            return RangeCommand.run(args);
        }
        if (args.length < 2 || !args[0].equals("run")) {
            System.err.print(USAGE);
            return 2;
        }
        Path out = null;
        Path jar = Path.of("java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar");
        Path tool = Path.of("deploy/needle-cluster");
        Path clusterDir = null;
        String heap = null;
        String latency = null;
        double scale = 1;
        boolean warmOnly = false;
        Experiment e;
        try {
            for (int i = 2; i < args.length; i++) {
                String a = args[i];
                switch (a) {
                    case "--out" -> out = Path.of(value(args, ++i, a));
                    case "--plugin-jar" -> jar = Path.of(value(args, ++i, a));
                    case "--cluster-tool" -> tool = Path.of(value(args, ++i, a));
                    case "--cluster-dir" -> clusterDir = Path.of(value(args, ++i, a));
                    case "--heap" -> heap = value(args, ++i, a);
                    case "--latency" -> latency = value(args, ++i, a);
                    case "--scale" -> scale = Double.parseDouble(value(args, ++i, a));
                    case "--warm-only" -> warmOnly = true;
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            }
            e = Experiment.read(Path.of(args[1]));
            if (scale != 1) {
                e = e.scaled(scale);
            }
            if (warmOnly) {
                e = e.warmOnly();
            }
            if (latency != null) {
                Experiment.Cluster c = e.clusterOrDefault();
                require(c.nodes() > 1, "--latency needs an experiment on several nodes ('cluster.nodes')");
                e = e.on(new Experiment.Cluster(c.nodes(), latency, c.replicationFactor()));
                if (out == null) {
                    out = Path.of("bench/results", e.name() + "-" + latency.replace(':', '-'));
                }
            }
            if (heap == null) {
                heap = e.clusterOrDefault().nodes() == 1 ? "2G" : "1G";
            }
            Runner.checkCanDropCaches(e);
            requireClusterFiles(tool, jar);
            if (out == null) {
                out = Path.of("bench/results", e.name());
            }
            if (clusterDir == null) {
                clusterDir = Files.createTempDirectory("needle-bench-cluster");
            }
        } catch (IllegalArgumentException | IllegalStateException | IOException ex) {
            System.err.println("needle-bench: " + ex.getMessage());
            return 2;
        }
        Experiment.Cluster shape = e.clusterOrDefault();
        System.err.printf("needle-bench: %s (%s)%n", e.name(), e.title());
        System.err.printf(
                "starting %s with the Needle plugin%s in %s%n",
                shape.nodes() == 1 ? "a Cassandra node" : shape.nodes() + " Cassandra nodes",
                shape.latency() == null ? "" : ", emulated latency " + shape.latency(),
                clusterDir);
        List<String> up = new ArrayList<>(List.of("--heap", heap));
        if (shape.latency() != null) {
            up.addAll(List.of("--latency", shape.latency()));
        }
        try (LocalCluster cluster =
                LocalCluster.start(tool, jar, clusterDir, shape.nodes(), up.toArray(new String[0]))) {
            // Ctrl-C skips finally blocks: LocalCluster stops the nodes from its shutdown hook.
            Runtime.getRuntime().addShutdownHook(new Thread(() -> stopping = true, "needle-bench-interrupted"));
            RunResult result = new Runner(e, cluster, out.resolve("results.json"), System.err)
                    .note("command", "needle-bench " + String.join(" ", args))
                    .note("node_heap", heap)
                    .note("nodes", shape.nodes())
                    .note("latency", shape.latency() == null ? "none" : shape.latency())
                    .run();
            System.out.println();
            System.out.print(Report.table(result));
            System.out.println("results: " + out.resolve("results.json"));
            long wrong = result.wrongResults();
            if (wrong > 0) {
                System.err.println("needle-bench: " + wrong + " operations returned wrong results (see results.json)");
                return 1;
            }
            return 0;
        } catch (IllegalArgumentException ex) {
            System.err.println("needle-bench: " + ex.getMessage());
            return 2;
        } catch (IOException | RuntimeException ex) {
            if (stopping) {
                System.err.println(
                        "needle-bench: interrupted; the node is stopped and results.json holds the points measured so far");
                return 1;
            }
            System.err.println("needle-bench: the run failed: " + ex.getMessage());
            ex.printStackTrace();
            return 1;
        }
    }

    /** The cluster tool and the plugin jar a run starts its nodes with, or an error that says what to do. */
    static void requireClusterFiles(Path tool, Path jar) {
        if (!Files.isExecutable(tool)) {
            throw new IllegalArgumentException("cluster tool not found or not executable: " + tool.toAbsolutePath()
                    + " (run from the repository root, or pass --cluster-tool)");
        }
        if (!Files.isRegularFile(jar)) {
            throw new IllegalArgumentException("Needle plugin jar not found: " + jar.toAbsolutePath()
                    + " (build it with 'make build', or pass --plugin-jar)");
        }
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }

    private static String value(String[] args, int i, String option) {
        if (i >= args.length) {
            throw new IllegalArgumentException(option + " needs a value");
        }
        return args[i];
    }
}
