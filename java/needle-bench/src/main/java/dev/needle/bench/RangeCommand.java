package dev.needle.bench;

import dev.needle.bench.RangeResult.ClientsResult;
import dev.needle.bench.RangeResult.MixResult;
import dev.needle.testkit.LocalCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/** {@code needle-bench range}: reads a range experiment, starts its cluster, runs it ({@link RangeBench}). */
final class RangeCommand {
    private RangeCommand() {}

    static final String USAGE = """
            usage: needle-bench range EXPERIMENT.json [options]   (a range-query experiment, docs/harness.md)
              --out DIR            where results.json goes (default bench/results/<name>)
              --plugin-jar JAR     the Needle plugin (default java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar)
              --cluster-tool PATH  deploy/needle-cluster (default: deploy/needle-cluster)
              --heap SIZE          each node's heap (default 1G)
              --scale F            multiply the rows by F (quick runs)
              --mixes A,B,...      run only the mixes with these labels (part of a sweep)
            """;

    /** {@code needle-bench range ...}: 0 done, 1 the run failed or the variants disagreed, 2 bad command line. */
    static int run(String[] args) {
        RangeExperiment e;
        Path out = null;
        Path jar = Path.of("java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar");
        Path tool = Path.of("deploy/needle-cluster");
        String heap = "1G";
        try {
            if (args.length < 2 || args[1].startsWith("-")) {
                throw new IllegalArgumentException("name an experiment file");
            }
            double scale = 1;
            List<String> mixes = null;
            for (int i = 2; i < args.length; i++) {
                String a = args[i];
                String v = i + 1 < args.length ? args[++i] : null;
                if (v == null) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                switch (a) {
                    case "--out" -> out = Path.of(v);
                    case "--plugin-jar" -> jar = Path.of(v);
                    case "--cluster-tool" -> tool = Path.of(v);
                    case "--heap" -> heap = v;
                    case "--scale" -> scale = Double.parseDouble(v);
                    case "--mixes" -> mixes = List.of(v.split(","));
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            }
            e = RangeExperiment.read(Path.of(args[1]));
            if (scale != 1) {
                e = e.scaled(scale);
            }
            if (mixes != null) {
                e = e.onlyMixes(mixes);
            }
            Main.requireClusterFiles(tool, jar);
            if (out == null) {
                out = Path.of("bench/results", e.name());
            }
        } catch (IllegalArgumentException ex) {
            System.err.println("needle-bench: " + ex.getMessage());
            System.err.print(USAGE);
            return 2;
        }
        System.err.printf(
                "needle-bench: %s (%s)%nstarting %d Cassandra nodes%n",
                e.name(), e.title(), e.cluster().nodes());
        List<String> up = new ArrayList<>(List.of("--heap", heap));
        up.addAll(e.cluster().yamlArgs());
        try (LocalCluster c = LocalCluster.start(
                tool,
                jar,
                Files.createTempDirectory("needle-range"),
                e.cluster().nodes(),
                up.toArray(new String[0]))) {
            RangeResult r = new RangeBench(e, c, System.err).run("needle-bench " + String.join(" ", args), out);
            System.err.println("results: " + out.resolve("results.json"));
            int wrong = r.mixes().stream().mapToInt(MixResult::wrongResults).sum()
                    + r.clients().stream() // each point's count is on each of its variants: count it once
                            .filter(p -> p.variant().equals(r.clients().get(0).variant()))
                            .mapToInt(ClientsResult::wrongResults)
                            .sum();
            if (wrong > 0) {
                System.err.println("needle-bench: " + wrong + " queries were answered differently by the variants");
                return 1;
            }
            return 0;
        } catch (IOException | RuntimeException ex) {
            System.err.println("needle-bench: the range run failed: " + ex.getMessage());
            ex.printStackTrace();
            if (Files.exists(out.resolve("results.partial.json"))) {
                System.err.println("needle-bench: what was measured before: " + out.resolve("results.partial.json"));
            }
            return 1;
        }
    }
}
