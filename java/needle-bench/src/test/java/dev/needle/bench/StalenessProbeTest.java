package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.fasterxml.jackson.databind.JsonNode;
import java.util.Arrays;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class StalenessProbeTest {
    /** The bytes sent between nodes are counted per node and peer, and a count that started over voids the run. */
    @Test
    void internodeBytesAreCountedPerConnectionAndAResetVoidsTheRun() {
        Map<String, Long> before = Map.of("1 /127.0.0.2:7000", 1_000L, "2 /127.0.0.1:7000", 5_000L);
        assertEquals(
                700, SyncCost.bytesSince(before, Map.of("1 /127.0.0.2:7000", 1_200L, "2 /127.0.0.1:7000", 5_500L)));
        assertEquals(
                400,
                SyncCost.bytesSince(
                        before,
                        Map.of("1 /127.0.0.2:7000", 1_100L, "2 /127.0.0.1:7000", 5_000L, "3 /127.0.0.1:7000", 300L)),
                "a peer first seen counts from zero");
        assertEquals(
                -1,
                SyncCost.bytesSince(before, Map.of("1 /127.0.0.2:7000", 4_000L, "2 /127.0.0.1:7000", 100L)),
                "a count that went down started over: the bytes before are not known, whatever the others sent");
        assertEquals(-1, SyncCost.bytesSince(before, Map.of("1 /127.0.0.2:7000", 4_000L)), "a connection went away");
    }

    @Test
    void timesFallInTheBinWhoseLowerBoundTheyReach() {
        assertEquals(0, KeyProbe.bin(0));
        assertEquals(0, KeyProbe.bin(499_999));
        assertEquals(1, KeyProbe.bin(500_000));
        assertEquals(3, KeyProbe.bin(2_000_000));
        assertEquals(3, KeyProbe.bin(2_999_999));
        int last = KeyProbe.BINS_MS.length - 1;
        assertEquals(last, KeyProbe.bin(5_000_000_000L));
        assertEquals(last, KeyProbe.bin(Long.MAX_VALUE));
    }

    @Test
    void percentilesAreInMillisecondsOfTheSortedValues() {
        long[] nanos = new long[1000];
        for (int i = 0; i < nanos.length; i++) {
            nanos[i] = (nanos.length - i) * 1_000_000L; // 1000 ms down to 1 ms
        }
        StalenessResult.Percentiles p = StalenessResult.Percentiles.ofNanos(nanos);
        assertEquals(new StalenessResult.Percentiles(501.0, 991.0, 1000.0, 1000.0), p);
        assertEquals(1000_000_000L, nanos[0], "the input is left as it was");
        assertEquals(StalenessResult.Percentiles.NONE, StalenessResult.Percentiles.ofNanos(new long[0]));
    }

    /**
     * Percentiles of a Cassandra histogram's bucket counts: the upper end of the bucket that holds
     * each, as Cassandra reports them (the ends it reported in earlier runs: 263,210 and 545,791
     * microseconds), with or without a bucket for zeros, a timer's 127 buckets or a histogram's 164.
     */
    @Test
    void bucketCountsGivePercentilesAsCassandraReportsThem() {
        long[] ends = StalenessResult.Percentiles.bucketEnds(166, true);
        assertEquals(
                List.of(0L, 1L, 2L, 3L, 4L, 5L, 6L, 7L, 8L, 10L, 12L, 14L, 17L, 20L, 24L),
                Arrays.stream(ends).limit(15).boxed().toList());
        int at20 = Arrays.binarySearch(ends, 20);
        int at545791 = Arrays.binarySearch(ends, 545_791);
        assertTrue(Arrays.binarySearch(ends, 263_210) > 0 && at545791 > 0, "ends Cassandra reported");
        assertEquals(127, StalenessResult.Percentiles.bucketEnds(128, false).length);
        assertEquals(1L, StalenessResult.Percentiles.bucketEnds(128, false)[0]);

        long[] counts = new long[166];
        counts[at20] = 998;
        counts[at545791] = 2;
        assertEquals(
                new StalenessResult.Percentiles(0.02, 0.02, 545.791, 545.791),
                StalenessResult.Percentiles.ofBucketsMicros(counts, true));
        counts[at20] = 999;
        counts[at545791] = 1;
        assertEquals(
                new StalenessResult.Percentiles(0.02, 0.02, 0.02, 545.791),
                StalenessResult.Percentiles.ofBucketsMicros(counts, true),
                "999 of 1,000 within 20 us");
        assertEquals(
                StalenessResult.Percentiles.NONE, StalenessResult.Percentiles.ofBucketsMicros(new long[166], true));
        counts[165] = 1;
        assertThrows(IllegalStateException.class, () -> StalenessResult.Percentiles.ofBucketsMicros(counts, true));
        assertThrows(
                IllegalStateException.class, () -> StalenessResult.Percentiles.ofBucketsMicros(new long[128], true));
    }

    /**
     * The document has the fields the summary (bench/plot/staleness.py) reads, under the names it
     * reads them by: the tables' probes beside the phase's other entries, "p99.9", the changes of
     * Needle's table only, null where no change was sent; what is not measured yet is left out.
     */
    @Test
    void theDocumentHasTheFieldsTheSummaryReads() throws Exception {
        var none = StalenessResult.Percentiles.NONE;
        var some = new StalenessResult.Percentiles(1.0, 2.0, 3.0, 4.0);
        var probe = new KeyProbe.Result(
                10, 40, 3, 2, Map.of(0, 8, 1, 2), some, none, List.of(new KeyProbe.Bin(0, 0.5, 40, 3, 0.075)), null);
        Map<String, KeyProbe.Result> tables = new LinkedHashMap<>();
        tables.put("needle-cuckoo", probe.withDecisions(Map.of("NodeSkipsOne", 5L)));
        tables.put("stock", probe);
        var phase = new StalenessResult.Phase(
                tables,
                Map.of("node1", some),
                Map.of("node1", new StalenessResult.ChangeWait(7, some)),
                new StalenessResult.Load(4, 100, 50, 1.5, 9.0));
        Map<String, StalenessResult.Phase> phases = new LinkedHashMap<>();
        phases.put("load", phase);
        var doc = new StalenessResult("e", Map.of("cores", 2), 4, "lan", "1s", "m", phases, List.of(), null, null);
        JsonNode partial = ResultFiles.JSON.readTree(ResultFiles.JSON.writeValueAsString(doc));
        assertFalse(partial.has("sync_cost"), "not measured yet: left out");

        var stock = new SyncCost.Insertion(10, 100, 2.0, 50, 5000, 3000, 7.5, null);
        var needle = new SyncCost.Insertion(10, 100, 2.0, 50, 5000, 3000, 7.5, new SyncCost.Changes(0, 2, null, null));
        doc = doc.withSyncCost(
                Map.of("full_rate", Map.of("stock", stock, "needle-cuckoo", needle)),
                List.of(new StalenessResult.NodeFilterRow("o", "copy", 1, 2, 3, 4, true)));
        JsonNode d = ResultFiles.JSON.readTree(ResultFiles.JSON.writeValueAsString(doc));
        assertEquals("1s", d.get("staleness_bound").asText());
        JsonNode load = d.get("probe").get("load");
        assertEquals(
                Set.of("needle-cuckoo", "stock", "cassandra_mutation_delivery_ms", "needle_sync_wait_ms", "load"),
                names(load));
        JsonNode needleProbe = load.get("needle-cuckoo");
        assertEquals(
                3.0,
                needleProbe.get("visible_at_every_coordinator_ms").get("p99.9").asDouble());
        assertEquals(0, needleProbe.get("last_miss_ms").size(), "no value: no percentile");
        assertEquals(8, needleProbe.get("keys_by_misses").get("0").asInt());
        assertEquals(0.075, needleProbe.get("curve").get(0).get("miss_fraction").asDouble());
        assertEquals(0.5, needleProbe.get("curve").get(0).get("to_ms").asDouble());
        assertEquals(
                5, needleProbe.get("coordinator_decisions").get("NodeSkipsOne").asLong());
        assertFalse(load.get("stock").has("coordinator_decisions"));
        assertEquals(
                7, load.get("needle_sync_wait_ms").get("node1").get("changes").asLong());
        assertEquals(
                3.0, load.get("needle_sync_wait_ms").get("node1").get("p99.9").asDouble());
        assertEquals(50, load.get("load").get("inserts_per_s").asLong());
        assertEquals(1.5, load.get("load").get("insert_p50_ms").asDouble());
        JsonNode fullRate = d.get("sync_cost").get("full_rate");
        assertEquals(
                7.5,
                fullRate.get("stock")
                        .get("internode_bytes_above_idle_per_partition_per_receiving_node")
                        .asDouble());
        assertFalse(fullRate.get("stock").has("changes_sent"), "stock sends no change");
        assertEquals(0, fullRate.get("needle-cuckoo").get("changes_sent").asLong());
        assertEquals(2, fullRate.get("needle-cuckoo").get("snapshots_sent").asLong());
        assertTrue(fullRate.get("needle-cuckoo")
                .get("wire_bytes_per_change_per_receiving_node")
                .isNull());
        assertEquals(0, d.get("violations").size());
        assertEquals("copy", d.get("node_filters").get(0).get("role").asText());
    }

    private static Set<String> names(JsonNode n) {
        Set<String> out = new HashSet<>();
        n.fieldNames().forEachRemaining(out::add);
        return out;
    }

    @Test
    void optionsHaveDefaultsAndBadValuesAreNamed() {
        StalenessOptions o = StalenessOptions.parse(new String[] {"staleness"});
        assertEquals(4, o.nodes());
        assertEquals("lan", o.latency());
        assertEquals("1s", o.staleness());
        o = StalenessOptions.parse(
                new String[] {"staleness", "--nodes", "3", "--latency", "az", "--keys", "10", "--staleness", "200ms"});
        assertEquals(3, o.nodes());
        assertEquals(10, o.keys());
        assertEquals("az", o.latency());
        assertTrue(message("--nodes", "1").contains("at least 2"));
        assertTrue(message("--keys", "0").contains("must be positive"));
        assertTrue(message("--keys", "many").contains("not a number"));
        assertTrue(message("--staleness", "soon").contains("not like 500ms"));
        assertTrue(message("--latency", "moon").contains("moon"));
        assertTrue(message("--what", "1").contains("unknown option --what"));
        assertTrue(message("--keys").contains("--keys needs a value"));
    }

    @Test
    void aLoadWithoutSizeRunsUntilStopped() {
        AtomicLong done = new AtomicLong();
        AtomicLong seen = new AtomicLong();
        ClosedLoop.Outcome out = ClosedLoop.runUntil(
                2,
                () -> seen.get() >= 1000,
                1,
                (i, r) -> {
                    seen.incrementAndGet();
                    return true;
                },
                done);
        assertTrue(out.histogram().getTotalCount() >= 1000, "ran until the stop condition held");
        assertTrue(out.histogram().getTotalCount() <= 1002, "each thread stops before its next operation");
        assertEquals(out.histogram().getTotalCount(), done.get());
    }

    private static String message(String... args) {
        String[] all = new String[args.length + 1];
        all[0] = "staleness";
        System.arraycopy(args, 0, all, 1, args.length);
        return assertThrows(IllegalArgumentException.class, () -> StalenessOptions.parse(all))
                .getMessage();
    }
}
