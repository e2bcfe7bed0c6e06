package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class ExperimentTest {
    static final String VALID = """
            {"name": "t", "title": "a test", "reproduces": null,
             "variants": ["stock", "needle-cuckoo"],
             "dataset": {"partitions": [100, 200], "rows_per_partition": 10, "row_bytes": 20, "deleted_fraction": 0.5},
             "load": {"threads": 2, "flush_after_load": true, "compact_after_load": false,
                      "flush_after_delete": true, "compact_after_delete": false},
             "delete_modes": ["partition", "row"], "caches": ["warm", "cold"],
             "run": {"op": "lookup", "threads": 1, "distribution": "zipf-scattered", "ops_per_round": 100, "rounds": 2,
                     "warmup_fraction": 0.1, "coordinator": "fixed", "consistency": "ONE"},
             "points": [{"label": "half", "x": 50, "mix": {"deleted": 0.5, "live": 0.5}}],
             "seed": 1}
            """;

    @TempDir
    Path dir;

    private Experiment read(String json) throws IOException {
        Path f = dir.resolve("t.json"); // VALID is named "t"
        Files.writeString(f, json);
        return Experiment.read(f);
    }

    private String error(String json) {
        return assertThrows(IllegalArgumentException.class, () -> read(json)).getMessage();
    }

    private void assertErrorNames(String expected, String json) {
        String m = error(json);
        assertTrue(m.contains(expected), "expected '" + expected + "' in: " + m);
    }

    @Test
    void readsAValidExperiment() throws IOException {
        Experiment e = read(VALID);
        assertEquals(List.of(100, 200), e.dataset().partitions());
        assertEquals("zipf-scattered", e.run().distribution());
        assertEquals(0.5, e.points().get(0).mix().get("live"));
        Experiment q = e.scaled(0.1).warmOnly();
        assertEquals(List.of(10, 20), q.dataset().partitions());
        assertEquals(10, q.run().opsPerRound());
        assertEquals(List.of("warm"), q.caches());
    }

    @Test
    void everyCommittedExperimentIsValid() throws IOException {
        Path folder = Path.of("../../bench/experiments");
        List<Path> files;
        try (Stream<Path> s = Files.list(folder)) {
            files = s.filter(p -> p.toString().endsWith(".json")).toList();
        }
        assertTrue(
                files.size() >= 11,
                "expected the ten experiments of the tables and the demo in " + folder.toAbsolutePath());
        for (Path f : files) {
            if (f.getFileName().toString().startsWith("range-")) {
                RangeExperiment.read(f); // range-query experiments: RangeExperimentTest
                continue;
            }
            Experiment e = Experiment.read(f);
            assertEquals(f.getFileName().toString(), e.name() + ".json", "name must match the file name");
            assertEquals(Variant.NAMES, e.variants(), f + " must compare all three variants");
        }
    }

    @Test
    void mistakesAreNamed() {
        assertErrorNames("unknown field 'sede'", VALID.replace("\"seed\"", "\"sede\""));
        assertErrorNames(
                "sums to", VALID.replace("\"deleted\": 0.5, \"live\": 0.5", "\"deleted\": 0.5, \"live\": 0.6"));
        assertErrorNames("must grow", VALID.replace("[100, 200]", "[200, 100]"));
        assertErrorNames("needle-xor", VALID.replace("\"needle-cuckoo\"]", "\"needle-xor\"]"));
        assertErrorNames("deleted_fraction", VALID.replace("\"deleted_fraction\": 0.5", "\"deleted_fraction\": 0"));
        assertErrorNames("lukewarm", VALID.replace("\"cold\"", "\"lukewarm\""));
        assertErrorNames("lookup or insert", VALID.replace("\"op\": \"lookup\"", "\"op\": \"scan\""));
        assertErrorNames("pool 'gone'", VALID.replace("{\"deleted\": 0.5, \"live\": 0.5}", "{\"gone\": 1.0}"));
        assertErrorNames("t.json", "{");
        assertErrorNames("its file must be u.json", VALID.replace("\"name\": \"t\"", "\"name\": \"u\""));
        assertErrorNames("unknown field 'run.thread'", VALID.replace("\"threads\": 1,", "\"thread\": 1,"));
        assertErrorNames(
                "unknown field 'points[0].lable'", VALID.replace("\"label\": \"half\"", "\"lable\": \"half\""));
        assertErrorNames("missing field 'run.rounds'", VALID.replace("\"rounds\": 2,", ""));
        String missing = assertThrows(IllegalArgumentException.class, () -> Experiment.read(dir.resolve("nope.json")))
                .getMessage();
        assertTrue(missing.contains("not found"), missing);
    }

    @Test
    void insertPointsNeedALoad() {
        String insert = VALID.replace("\"op\": \"lookup\"", "\"op\": \"insert\"");
        assertTrue(error(insert).contains("needs 'load'"));
        Experiment ok = assertDoesNotThrow(
                () -> read(insert.replace("\"mix\": {\"deleted\": 0.5, \"live\": 0.5}", "\"load\": 0.5")));
        assertTrue(ok.isInsert());
        assertErrorNames(
                "growing 'load'",
                insert.replace(
                        "\"mix\": {\"deleted\": 0.5, \"live\": 0.5}}",
                        "\"load\": 0.5}, {\"label\": \"less\", \"x\": 1, \"load\": 0.2}"));
        assertFalse(ok.points().get(0).load() == null);
        assertEquals(null, ok.points().get(0).rate());
        Experiment paced = assertDoesNotThrow(() ->
                read(insert.replace("\"mix\": {\"deleted\": 0.5, \"live\": 0.5}", "\"load\": 0.5, \"rate\": 250")));
        assertEquals(250.0, paced.points().get(0).rate());
        assertErrorNames(
                "'rate' must be > 0",
                insert.replace("\"mix\": {\"deleted\": 0.5, \"live\": 0.5}", "\"load\": 0.5, \"rate\": 0"));
        assertErrorNames("takes no 'rate'", VALID.replace("\"x\": 50,", "\"x\": 50, \"rate\": 10,"));
    }

    @Test
    void aClusterOfSeveralNodesWithRemoteKeys() throws IOException {
        String remote = VALID.replace(
                        "\"seed\": 1}",
                        "\"seed\": 1, \"cluster\": {\"nodes\": 4, \"latency\": \"lan\","
                                + " \"replication_factor\": 1}, \"index_options\": {\"node_filter\": \"one\"}}")
                .replace("\"mix\": {\"deleted\": 0.5, \"live\": 0.5}", "\"mix\": {\"deleted\": 1.0}, \"remote\": 0.75");
        Experiment e = read(remote);
        assertEquals(4, e.clusterOrDefault().nodes());
        assertEquals(1, e.clusterOrDefault().replication());
        assertEquals(0.75, e.points().get(0).remote());
        assertEquals("one", e.indexOptions().get("node_filter"));
        Experiment az = e.on(new Experiment.Cluster(4, "az", null));
        assertEquals(4, az.clusterOrDefault().replication(), "no replication factor: every node holds every key");
        assertEquals(1, read(VALID).clusterOrDefault().nodes());
        assertErrorNames(
                "node 1 holds every key", remote.replace("\"replication_factor\": 1", "\"replication_factor\": 4"));
        assertErrorNames("'remote' must be in [0, 1]", remote.replace("0.75", "1.5"));
        assertErrorNames("may not set 'filter'", remote.replace("\"node_filter\"", "\"filter\""));
        assertErrorNames("'cluster.nodes' must be 1 to 9", remote.replace("\"nodes\": 4", "\"nodes\": 0"));
        assertErrorNames("missing field 'cluster.nodes'", remote.replace("\"nodes\": 4,", ""));
    }

    @Test
    void resourceSamplingNeedsSeveralNodesAndSaneTimes() throws IOException {
        String cluster = VALID.replace(
                "\"seed\": 1}",
                "\"seed\": 1, \"cluster\": {\"nodes\": 3, \"latency\": \"lan\", \"replication_factor\": 3},"
                        + " \"resources\": {\"interval_s\": 5, \"idle_before_s\": 30, \"idle_after_s\": 60}}");
        Experiment e = read(cluster);
        assertEquals(new Experiment.ResourceSampling(5, 30, 60), e.resources());
        assertEquals(e.resources(), e.scaled(0.5).warmOnly().resources(), "kept by the copies");
        assertEquals(null, read(VALID).resources());
        assertErrorNames(
                "'resources.interval_s' must be >= 0.5", cluster.replace("\"interval_s\": 5", "\"interval_s\": 0"));
        assertErrorNames("must be >= 0", cluster.replace("\"idle_after_s\": 60", "\"idle_after_s\": -1"));
        assertErrorNames("missing field 'resources.idle_before_s'", cluster.replace("\"idle_before_s\": 30,", ""));
        assertErrorNames(
                "needs a 'cluster' of several nodes",
                VALID.replace(
                        "\"seed\": 1}",
                        "\"seed\": 1, \"resources\": {\"interval_s\": 5, \"idle_before_s\": 0, \"idle_after_s\": 0}}"));
    }

    private static <T> T assertDoesNotThrow(org.junit.jupiter.api.function.ThrowingSupplier<T> s) {
        return org.junit.jupiter.api.Assertions.assertDoesNotThrow(s);
    }
}
