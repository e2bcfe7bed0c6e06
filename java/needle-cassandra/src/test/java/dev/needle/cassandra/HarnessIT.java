package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.needle.bench.CassandraClient;
import dev.needle.bench.Experiment;
import dev.needle.bench.Runner;
import dev.needle.testkit.LocalCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The workload harness end to end on a real node: a small lookup experiment and a small insert
 * experiment, every variant, checked against what the data set says each lookup must return and
 * against Needle's own counters.
 */
class HarnessIT {
    @TempDir
    Path dir;

    private static final String LOOKUPS = """
            {"name": "harness-it", "title": "harness test", "reproduces": null,
             "variants": ["stock", "needle-bloom", "needle-cuckoo"],
             "dataset": {"partitions": [300, 600], "rows_per_partition": 20, "row_bytes": 50, "deleted_fraction": 0.5},
             "load": {"threads": 2, "flush_after_load": true, "compact_after_load": true,
                      "flush_after_delete": true, "compact_after_delete": false},
             "delete_modes": ["partition", "row"], "caches": ["warm"],
             "run": {"op": "lookup", "threads": 2, "distribution": "zipf-clustered", "ops_per_round": 150, "rounds": 2,
                     "warmup_fraction": 1.0, "coordinator": "fixed", "consistency": "ONE"},
             "points": [{"label": "deleted", "x": 0, "mix": {"deleted": 1.0}},
                        {"label": "live", "x": 1, "mix": {"live": 1.0}},
                        {"label": "mixed", "x": 2, "mix": {"live": 0.5, "deleted": 0.25, "absent": 0.25}},
                        {"label": "absent", "x": 3, "mix": {"absent": 1.0}}],
             "seed": 9}
            """;

    @Test
    void lookupsAndInsertsOnEveryVariant() throws Exception {
        Path lookups = dir.resolve("harness-it.json");
        Files.writeString(lookups, LOOKUPS);
        Path inserts = dir.resolve("harness-it-inserts.json");
        Files.writeString(
                inserts,
                LOOKUPS.replace("\"op\": \"lookup\"", "\"op\": \"insert\"")
                        .replace("\"name\": \"harness-it\"", "\"name\": \"harness-it-inserts\"")
                        .replace("\"partitions\": [300, 600]", "\"partitions\": [200]")
                        .replace("\"deleted_fraction\": 0.5", "\"deleted_fraction\": 0")
                        .replace("\"delete_modes\": [\"partition\", \"row\"]", "\"delete_modes\": [\"none\"]")
                        .replaceAll("\"mix\": \\{[^}]*}", "\"load\": 0.5")
                        .replace("\"x\": 3, \"load\": 0.5", "\"x\": 3, \"load\": 1.0"));
        ObjectMapper json = new ObjectMapper();
        try (LocalCluster cluster = LocalCluster.start(1)) {
            Path out = dir.resolve("lookups.json");
            new Runner(Experiment.read(lookups), cluster, out, System.err).run();
            JsonNode result = json.readTree(out.toFile());
            assertTrue(result.path("machine").path("cores").asInt() > 0);
            JsonNode runs = result.path("runs");
            assertEquals(2 * 2 * 4, runs.size(), "2 sizes x 2 delete modes x 4 points");
            for (JsonNode run : runs) {
                String where =
                        run.path("partitions") + " " + run.path("delete_mode").asText() + " "
                                + run.path("point").asText();
                for (String v : new String[] {"stock", "needle-bloom", "needle-cuckoo"}) {
                    JsonNode s = run.path("variants").path(v);
                    assertEquals(300, s.path("count").asLong(), where + " " + v);
                    assertEquals(0, s.path("wrong_results").asLong(), where + " " + v + " returned wrong rows");
                    assertTrue(s.path("p50_us").asDouble() > 0
                            && s.path("p99_us").asDouble() >= s.path("p50_us").asDouble());
                }
                JsonNode cuckoo = run.path("variants").path("needle-cuckoo");
                JsonNode bloom = run.path("variants").path("needle-bloom");
                long skipped = cuckoo.path("needle_skipped").asLong();
                switch (run.path("point").asText()) {
                    case "live" -> {
                        assertEquals(0, skipped, where);
                        assertEquals(0, bloom.path("needle_skipped").asLong(), where);
                    }
                    case "deleted" -> {
                        // Partition deletes are known at once; row-by-row deletes after the first
                        // (warm-up) read of each key has proved it empty.
                        assertTrue(
                                skipped >= (run.path("delete_mode").asText().equals("partition") ? 300 : 200),
                                where + ": skipped " + skipped);
                        assertEquals(
                                0, bloom.path("needle_skipped").asLong(), where + ": a Bloom filter cannot forget");
                    }
                    case "absent" -> {
                        assertTrue(skipped >= 290, where + ": skipped " + skipped);
                        assertTrue(bloom.path("needle_skipped").asLong() >= 270, where);
                    }
                    default -> assertTrue(skipped > 0 && skipped < 300, where + ": skipped " + skipped);
                }
            }

            Path insertOut = dir.resolve("inserts.json");
            new Runner(Experiment.read(inserts), cluster, insertOut, System.err).run();
            JsonNode ins = json.readTree(insertOut.toFile()).path("runs");
            assertEquals(4, ins.size());
            for (JsonNode run : ins) {
                assertEquals(
                        300,
                        run.path("variants").path("needle-cuckoo").path("count").asLong());
                assertTrue(run.path("ratio_p50_stock_over_cuckoo").asDouble() > 0);
            }
            // Every variant holds the same partitions: the bulk load to 50 % of 200, then per point
            // 300 warm-up and 300 measured inserts (past the later points' loads already).
            try (CqlSession s = cluster.session(1)) {
                for (String t : new String[] {"stock", "needle_bloom", "needle_cuckoo"}) {
                    int partitions = s.execute("SELECT DISTINCT pk FROM " + Runner.KEYSPACE + "." + t)
                            .all()
                            .size();
                    assertEquals(100 + 4 * (300 + 300), partitions, t);
                }
                // The client's other operations, on a Needle table.
                try (CassandraClient c = new CassandraClient(
                        s, false, Runner.KEYSPACE, "needle_cuckoo", 10, DefaultConsistencyLevel.ONE, 1)) {
                    long key = 1L << 40;
                    assertEquals(0, c.lookup(key));
                    c.insert(key, 0, 10);
                    assertEquals(10, c.lookup(key));
                    assertEquals(4, c.range(key, 2, 5));
                    c.update(key, 3);
                    assertEquals(10, c.lookup(key));
                    c.deleteRows(key, 0, 3);
                    assertEquals(7, c.lookup(key));
                    assertEquals(2, c.range(key, 2, 4));
                    c.deletePartition(key);
                    assertEquals(0, c.lookup(key));
                }
            }
        }
    }
}
