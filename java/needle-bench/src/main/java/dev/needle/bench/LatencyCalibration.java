package dev.needle.bench;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.type.codec.TypeCodecs;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.needle.testhooks.LatencyProfile;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.NodeJmx;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

/**
 * {@code needle-bench calibrate-latency}: what the emulated network latency really adds. For each
 * profile, a 3-node stock cluster (replication factor 1) is started with the test-hooks agent,
 * and every key is read at ONE through node 1; reads of keys node 1 owns never leave it, reads of
 * keys nodes 2 and 3 own make one round trip. The extra median latency of those remote reads
 * against the same reads without emulation ({@code raw}) is compared with the configured
 * round trip (twice the one-way delay), and each node's agent reports how late its timer released
 * messages (its jitter). Writes {@code calibration.json}.
 */
final class LatencyCalibration {
    private static final String USAGE = """
            usage: needle-bench calibrate-latency [options]
              --profiles LIST      latency profiles to measure (default raw,lan,az,wan; raw is always measured first)
              --reads N            reads per key and profile (default 5)
              --keys N             keys (default 600)
              --out DIR            where calibration.json goes (default bench/results/scheme2)
              --plugin-jar JAR     the Needle plugin (default java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar)
              --cluster-tool PATH  deploy/needle-cluster (default: deploy/needle-cluster)
            """;
    private static final String LATENESS = "dev.needle.testhooks:type=Latency";
    private static final int NODES = 3;

    private LatencyCalibration() {}

    static int run(String[] args) {
        List<String> profiles = new ArrayList<>(List.of("raw", "lan", "az", "wan"));
        int reads = 5;
        int keys = 600;
        Path out = Path.of("bench/results/scheme2");
        Path jar = Path.of("java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar");
        Path tool = Path.of("deploy/needle-cluster");
        try {
            for (int i = 1; i < args.length; i++) {
                String a = args[i];
                if (a.equals("--help") || a.equals("-h")) {
                    System.out.print(USAGE);
                    return 0;
                }
                String v = i + 1 < args.length ? args[i + 1] : null;
                if (v == null) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                i++;
                switch (a) {
                    case "--profiles" -> profiles = new ArrayList<>(Arrays.asList(v.split(",")));
                    case "--reads" -> reads = Integer.parseInt(v);
                    case "--keys" -> keys = Integer.parseInt(v);
                    case "--out" -> out = Path.of(v);
                    case "--plugin-jar" -> jar = Path.of(v);
                    case "--cluster-tool" -> tool = Path.of(v);
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            }
            for (String p : profiles) {
                LatencyProfile.parse(p); // a bad name fails here, before any cluster starts
            }
            profiles.remove("raw");
            profiles.add(0, "raw");
        } catch (IllegalArgumentException e) {
            System.err.println("needle-bench: " + e.getMessage());
            System.err.print(USAGE);
            return 2;
        }
        Map<String, Object> results = new LinkedHashMap<>();
        Map<String, Map<Integer, Double>> medians = new TreeMap<>();
        List<Map<String, Object>> rows = new ArrayList<>();
        try {
            for (String profile : profiles) {
                System.err.printf("calibrate-latency: profile %s: starting %d nodes%n", profile, NODES);
                Map<Integer, double[]> byOwner;
                List<Map<String, Object>> jitter = new ArrayList<>();
                double floor;
                try (LocalCluster c = LocalCluster.start(
                        tool, jar, Files.createTempDirectory("needle-calibration"), NODES, "--latency", profile)) {
                    CqlSession s = c.session(1);
                    byOwner = measure(c, s, profile, keys, reads);
                    floor = RequestFloor.latencies(s, Math.max(100, keys * reads / 2))
                                    .getValueAtPercentile(50)
                            / 1e6;
                    for (int n = 1; n <= NODES && !profile.equals("raw"); n++) {
                        Map<String, Object> j = new LinkedHashMap<>();
                        NodeJmx jmx = c.jmx(n);
                        j.put("node", n);
                        j.put("messages", jmx.get(LATENESS, "MessagesDelayed"));
                        j.put("lateness_p50_us", jmx.get(LATENESS, "LatenessP50Micros"));
                        j.put("lateness_p99_us", jmx.get(LATENESS, "LatenessP99Micros"));
                        j.put("lateness_max_us", jmx.get(LATENESS, "LatenessMaxMicros"));
                        jitter.add(j);
                    }
                }
                LatencyProfile lp = LatencyProfile.parse(profile);
                Map<Integer, Double> med = new TreeMap<>();
                for (var e : byOwner.entrySet()) {
                    int owner = e.getKey();
                    double[] lat = e.getValue();
                    med.put(owner, lat[0]);
                    Map<String, Object> r = new LinkedHashMap<>();
                    r.put("profile", profile);
                    r.put("owner", owner);
                    r.put("remote", owner != 1);
                    r.put("reads", (long) lat[3]);
                    r.put("p50_ms", round(lat[0]));
                    r.put("p90_ms", round(lat[1]));
                    r.put("p99_ms", round(lat[2]));
                    double configured = 2 * lp.oneWayNanos(1, owner) / 1e6;
                    r.put("configured_round_trip_ms", round(configured));
                    Double raw = medians.getOrDefault("raw", Map.of()).get(owner);
                    if (raw != null) {
                        double extra = lat[0] - raw;
                        r.put("extra_p50_ms_vs_raw", round(extra));
                        r.put("extra_minus_configured_ms", round(extra - configured));
                    }
                    rows.add(r);
                }
                medians.put(profile, med);
                Map<String, Object> p = new LinkedHashMap<>();
                p.put("request_floor_p50_ms", round(floor));
                p.put("timer_jitter", jitter);
                results.put(profile, p);
            }
        } catch (IOException | RuntimeException e) {
            System.err.println("needle-bench: calibration failed: " + e);
            return 1;
        }
        print(rows, results);
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("experiment", "calibration of the emulated internode latency (java/needle-testhooks)");
        doc.put("machine", Machine.facts());
        doc.put(
                "method",
                "3 stock nodes, replication factor 1, " + keys + " keys each read " + reads
                        + " times at ONE through node 1 after one warm-up round; p50 per owner");
        doc.put("reads", rows);
        doc.put("profiles", results);
        try {
            Files.createDirectories(out);
            new ObjectMapper()
                    .enable(SerializationFeature.INDENT_OUTPUT)
                    .writeValue(out.resolve("calibration.json").toFile(), doc);
            System.err.println("calibrate-latency: wrote " + out.resolve("calibration.json"));
        } catch (IOException e) {
            System.err.println("needle-bench: cannot write " + out + ": " + e.getMessage());
            return 1;
        }
        return 0;
    }

    /** {owner: [p50, p90, p99, count]} of reads through node 1, in ms. */
    private static Map<Integer, double[]> measure(LocalCluster c, CqlSession s, String profile, int keys, int reads)
            throws IOException {
        s.execute("CREATE KEYSPACE cal WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        s.execute("CREATE TABLE cal.t (pk int PRIMARY KEY, v text)");
        PreparedStatement insert = s.prepare("INSERT INTO cal.t (pk, v) VALUES (?, ?)");
        PreparedStatement select = s.prepare("SELECT v FROM cal.t WHERE pk = ?");
        TokenMap tokens = s.getMetadata().getTokenMap().orElseThrow();
        int[] owner = new int[keys];
        for (int k = 0; k < keys; k++) {
            s.execute(insert.bind(k, "v" + k));
            Node n = tokens.getReplicas("cal", TypeCodecs.INT.encode(k, ProtocolVersion.DEFAULT))
                    .iterator()
                    .next();
            owner[k] =
                    ((InetSocketAddress) n.getEndPoint().resolve()).getAddress().getAddress()[3];
        }
        for (int k = 0; k < keys; k++) {
            s.execute(select.bind(k)); // warm-up: connections, caches, JIT
        }
        for (int n = 1; n <= NODES && !profile.equals("raw"); n++) {
            c.jmx(n).invoke(LATENESS, "reset");
        }
        Map<Integer, List<Long>> lat = new TreeMap<>();
        for (int round = 0; round < reads; round++) {
            for (int k = 0; k < keys; k++) {
                long t0 = System.nanoTime();
                s.execute(select.bind(k));
                lat.computeIfAbsent(owner[k], o -> new ArrayList<>()).add(System.nanoTime() - t0);
            }
        }
        Map<Integer, double[]> out = new TreeMap<>();
        for (var e : lat.entrySet()) {
            long[] v = e.getValue().stream().mapToLong(Long::longValue).sorted().toArray();
            out.put(e.getKey(), new double[] {q(v, 0.5), q(v, 0.9), q(v, 0.99), v.length});
        }
        return out;
    }

    /** The q-quantile of sorted nanosecond values, in milliseconds. */
    static double q(long[] sorted, double q) {
        return sorted[Math.min(sorted.length - 1, (int) (q * sorted.length))] / 1e6;
    }

    /** Rounded to three decimals (microseconds, for milliseconds). */
    static double round(double ms) {
        return Math.round(ms * 1000) / 1000.0;
    }

    private static void print(List<Map<String, Object>> rows, Map<String, Object> profiles) {
        System.out.printf(
                "%-8s %-6s %8s %8s %8s %12s %14s %12s%n",
                "profile", "owner", "p50 ms", "p90 ms", "p99 ms", "configured", "extra vs raw", "difference");
        for (Map<String, Object> r : rows) {
            System.out.printf(
                    "%-8s %-6s %8s %8s %8s %12s %14s %12s%n",
                    r.get("profile"),
                    "node " + r.get("owner"),
                    r.get("p50_ms"),
                    r.get("p90_ms"),
                    r.get("p99_ms"),
                    r.get("configured_round_trip_ms"),
                    r.getOrDefault("extra_p50_ms_vs_raw", "-"),
                    r.getOrDefault("extra_minus_configured_ms", "-"));
        }
        profiles.forEach((p, v) -> System.out.println(p + ": " + v));
    }
}
