package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class RangeExperimentTest {
    private static final Path COMMITTED = Path.of("../../bench/experiments/range-mixes.json");

    @TempDir
    Path dir;

    @Test
    void theCommittedExperimentReadsAndScales() {
        RangeExperiment e = RangeExperiment.read(COMMITTED);
        assertEquals(1_000_000, e.rows());
        assertEquals(3, e.mixes().size());
        assertEquals(
                List.of("--yaml", "read_request_timeout=30000ms", "--yaml", "range_request_timeout=30000ms"),
                e.cluster().yamlArgs());
        RangeExperiment quick = e.scaled(0.1);
        assertEquals(100_000, quick.rows());
        assertEquals(10, quick.queriesPerMix(), "the queries do not scale");
        assertEquals(e.mixes(), quick.mixes(), "the mixes do not scale");
    }

    @Test
    void partOfASweepRunsByTheMixesLabels() {
        RangeExperiment e = RangeExperiment.read(Path.of("../../bench/experiments/range-sweep-sai.json"));
        RangeExperiment part = e.onlyMixes(List.of("0.9", "0.1"));
        assertEquals(
                List.of("0.1", "0.9"),
                part.mixes().stream().map(RangeExperiment.Mix::label).toList(),
                "in the file's order");
        assertEquals(e.rows(), part.rows());
        IllegalArgumentException x =
                assertThrows(IllegalArgumentException.class, () -> e.onlyMixes(List.of("0.1", "long")));
        assertTrue(x.getMessage().contains("no mix labelled long"), x.getMessage());
        assertTrue(x.getMessage().contains("0.0001"), "lists the file's labels: " + x.getMessage());
    }

    @Test
    void everyCommittedRangeExperimentReads() throws IOException {
        try (var files = Files.list(Path.of("../../bench/experiments"))) {
            long n = files.filter(f -> f.getFileName().toString().startsWith("range-"))
                    .peek(RangeExperiment::read)
                    .count();
            assertTrue(n >= 3, n + " range experiments");
        }
        assertTrue(
                RangeExperiment.read(Path.of("../../bench/experiments/range-sweep-sai.json"))
                        .hasSaiBesideIndex(),
                "the sweep with SAI beside the index");
        assertFalse(RangeExperiment.read(COMMITTED).hasSaiBesideIndex(), "absent: no SAI beside the index");
    }

    @Test
    void mistakesAreNamed() throws IOException {
        String valid = Files.readString(COMMITTED);
        assertError("unknown field 'rowz'", valid.replace("\"rows\"", "\"rowz\""));
        assertError("unknown variant 'vix'", valid.replace("\"hybrid-client\"]", "\"vix\"]"));
        assertError("min_length < max_length", valid.replace("\"max_length\": 0.002", "\"max_length\": 0.00001"));
        assertError(
                "replication_factor <= nodes", valid.replace("\"replication_factor\": 1", "\"replication_factor\": 4"));
        assertError("'zipf' must be from 0 (uniform) to 5", valid.replace("\"seed\":", "\"zipf\": -1, \"seed\":"));
        assertError("missing field 'queries_per_mix'", valid.replace("\"queries_per_mix\": 10,", ""));
        assertError(
                "'clients' needs 'threads' (1 to 64 each)",
                valid.replace("\"seed\":", "\"clients\": {\"threads\": [0], \"queries\": 4}, \"seed\":"));
        assertError("not a planner", valid.replace("\"seed\":", "\"leaf_sizes\": [100, 1000], \"seed\":"));
        assertError(
                "distinct leaf sizes of at least 16",
                valid.replace("\"hybrid\", \"hybrid-client\"]", "\"rix\"]")
                        .replace("\"seed\":", "\"leaf_sizes\": [8], \"seed\":"));
        assertError(
                "not with 'leaf_sizes' or 'hybrid-client'",
                valid.replace("\"seed\":", "\"sai_beside_index\": true, \"seed\":"));
        assertError(
                "'cluster.cassandra_yaml' maps top-level cassandra.yaml settings",
                valid.replace("\"read_request_timeout\"", "\"Read-Timeout\""));
        assertError("its file must be range-mixes.json", valid);
    }

    private void assertError(String expected, String json) throws IOException {
        Path f = dir.resolve("range-other.json");
        Files.writeString(f, json);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> RangeExperiment.read(f));
        assertTrue(e.getMessage().contains(expected), "'" + e.getMessage() + "' should say " + expected);
    }
}
