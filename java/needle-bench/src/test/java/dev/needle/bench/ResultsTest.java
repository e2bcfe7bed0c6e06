package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.HdrHistogram.Histogram;
import org.junit.jupiter.api.Test;

class ResultsTest {
    private static Histogram latencies(long... micros) {
        Histogram h = ClosedLoop.newHistogram();
        for (long us : micros) {
            h.recordValue(us * 1000);
        }
        return h;
    }

    @Test
    void statsAreInMicroseconds() {
        long[] values = new long[100];
        for (int i = 0; i < 100; i++) {
            values[i] = i + 1; // 1..100 us
        }
        LatencyStats s = LatencyStats.of(latencies(values), 2_000_000_000L);
        assertEquals(100L, s.count());
        assertEquals(50.5, s.meanUs(), 0.1);
        assertEquals(1.0, s.minUs(), 0.01);
        assertEquals(50.0, s.p50Us(), 0.1);
        assertEquals(95.0, s.p95Us(), 0.1);
        assertEquals(99.0, s.p99Us(), 0.1);
        assertEquals(100.0, s.maxUs(), 0.1);
        assertEquals(50.0, s.throughputOpsS(), 0.01);
        assertTrue(s.hdrHistogramNs().length() > 10);
    }

    private static VariantResult variant(long wrong, long... micros) {
        return new VariantResult(LatencyStats.of(latencies(micros), 1), wrong, null, null, null);
    }

    @Test
    void ratiosAreStockOverNeedle() {
        Map<String, VariantResult> byVariant = new LinkedHashMap<>();
        byVariant.put("stock", variant(0, 400, 400, 400));
        byVariant.put("needle-bloom", variant(0, 400, 400, 400));
        byVariant.put("needle-cuckoo", variant(0, 100, 100, 100));
        PointResult.StockRatios r = PointResult.StockRatios.of(byVariant);
        assertEquals(4.0, r.ratioP50StockOverCuckoo(), 0.01);
        assertEquals(1.0, r.ratioP50StockOverBloom(), 0.01);
        assertEquals(4.0, r.ratioP99StockOverCuckoo(), 0.01);
        byVariant.remove("needle-bloom");
        assertNull(PointResult.StockRatios.of(byVariant).ratioP50StockOverBloom());
        byVariant.remove("stock");
        assertNull(PointResult.StockRatios.of(byVariant));
    }

    /** The fields the summaries and charts read (bench/plot/needle_plot.py) keep their names. */
    @Test
    void aPointIsWrittenWithTheFieldsTheSummariesRead() {
        Map<String, VariantResult> byVariant = new LinkedHashMap<>();
        byVariant.put("stock", variant(0, 500, 600));
        byVariant.put(
                "needle-cuckoo",
                new VariantResult(
                        LatencyStats.of(latencies(100, 200), 1),
                        0,
                        null,
                        new NeedleCounters.Lookups(5, 1, 3L, 2L, 0L),
                        new NeedleCounters.Sync(10, 200, 300, 1, 0)));
        Experiment.Point p = new Experiment.Point("50% absent", 0.5, Map.of("absent", 0.5), null, null, null);
        PointResult point = new PointResult(
                p.label(),
                p.x(),
                "warm",
                7,
                byVariant,
                PointResult.StockRatios.of(byVariant),
                new PointResult.Lookup(
                        1000,
                        Map.of("stock", new PointResult.TableBytes(10, 0, 1)),
                        null,
                        p.mix(),
                        null,
                        new RequestFloor(
                                RequestFloor.QUERY,
                                LatencyStats.of(latencies(50), 1).withoutHistogram())),
                null);
        Map<String, Object> doc = Runner.asMap(result("T", point));
        Map<?, ?> run = (Map<?, ?>) ((List<?>) doc.get("runs")).get(0);
        assertFalse(doc.containsKey("finished"), "not known yet: left out");
        assertEquals("50% absent", run.get("point"));
        assertEquals(7, ((Number) run.get("warmup_ops_per_variant")).intValue());
        assertEquals(1000, ((Number) run.get("partitions")).intValue());
        assertTrue(run.containsKey("delete_mode") && run.get("delete_mode") == null, run.toString());
        assertTrue(run.containsKey("remote") && run.get("remote") == null, run.toString());
        assertFalse(run.containsKey("load"), "a lookup point has no load: " + run);
        assertEquals(
                Map.of("data", 10L, "needle", 0L, "sstables", 1L), ((Map<?, ?>) run.get("table_bytes")).get("stock"));
        assertEquals(RequestFloor.QUERY, ((Map<?, ?>) run.get("request_floor")).get("query"));
        assertFalse(((Map<?, ?>) run.get("request_floor")).containsKey("hdr_histogram_ns"));
        assertEquals(5.0, ((Number) run.get("ratio_p50_stock_over_cuckoo")).doubleValue(), 0.01);
        assertFalse(run.containsKey("ratio_p50_stock_over_bloom"));
        Map<?, ?> cuckoo = (Map<?, ?>) ((Map<?, ?>) run.get("variants")).get("needle-cuckoo");
        for (String field : List.of(
                "count",
                "mean_us",
                "min_us",
                "p50_us",
                "p95_us",
                "p99_us",
                "max_us",
                "throughput_ops_s",
                "hdr_histogram_ns",
                "wrong_results",
                "needle_skipped",
                "needle_passed",
                "needle_node_skipped",
                "needle_node_passed_live",
                "needle_node_passed_stale")) {
            assertTrue(cuckoo.containsKey(field), field + " missing from " + cuckoo.keySet());
        }
        assertEquals(5, ((Number) cuckoo.get("needle_skipped")).intValue());
        assertEquals(
                Map.of(
                        "changes_sent",
                        10L,
                        "batch_bytes_sent",
                        200L,
                        "bytes_sent",
                        300L,
                        "snapshots_sent",
                        1L,
                        "epochs_started",
                        0L),
                cuckoo.get("node_filter_sync"));
        Map<?, ?> stock = (Map<?, ?>) ((Map<?, ?>) run.get("variants")).get("stock");
        assertFalse(stock.containsKey("needle_skipped"), "stock has no Needle counters: " + stock.keySet());
        assertFalse(stock.containsKey("resources"));
    }

    @Test
    void tableShowsEveryRunAndWrongResultsAreCounted() {
        Map<String, VariantResult> byVariant = new LinkedHashMap<>();
        byVariant.put("stock", variant(0, 500, 600));
        byVariant.put("needle-cuckoo", variant(3, 500, 600));
        Experiment.Point p = new Experiment.Point("100% deleted", 1.0, Map.of("deleted", 1.0), null, null, null);
        PointResult point = new PointResult(
                p.label(),
                p.x(),
                "warm",
                0,
                byVariant,
                PointResult.StockRatios.of(byVariant),
                new PointResult.Lookup(10, Map.of(), "row", p.mix(), null, null),
                null);
        RunResult result = result("T", point);
        String table = Report.table(result);
        assertTrue(table.contains("warm, row deletes, 100% deleted"), table);
        assertTrue(table.contains("1.00x"), table);
        assertEquals(3, result.wrongResults());
    }

    /** A result document of one point, as a run writes it before it ends. */
    private static RunResult result(String title, PointResult point) {
        return new RunResult(
                "n",
                title,
                null,
                "2026-01-01T00:00:00Z",
                Map.of(),
                Map.of(),
                Map.of(),
                List.of(point),
                null,
                null,
                null,
                null,
                null);
    }

    /** Runs Main with {@code args}; returns its exit code and what it wrote to standard error. */
    private static String[] main(String... args) {
        java.io.PrintStream saved = System.err;
        java.io.ByteArrayOutputStream err = new java.io.ByteArrayOutputStream();
        System.setErr(new java.io.PrintStream(err, true, java.nio.charset.StandardCharsets.UTF_8));
        try {
            int code = Main.run(args);
            return new String[] {String.valueOf(code), err.toString(java.nio.charset.StandardCharsets.UTF_8)};
        } finally {
            System.setErr(saved);
        }
    }

    private static void assertRefused(String expected, String... args) {
        String[] r = main(args);
        assertEquals("2", r[0], r[1]);
        assertTrue(r[1].contains(expected), "expected '" + expected + "' in: " + r[1]);
        assertTrue(!r[1].contains("starting a Cassandra node"), r[1]);
    }

    @Test
    void badCommandLinesExitWith2BeforeStartingAnything() {
        String demo = "../../bench/experiments/demo.json";
        String tool = "../../deploy/needle-cluster";
        assertRefused("usage: needle-bench run");
        assertRefused("experiment file not found", "run", "no-such-experiment.json");
        assertRefused("unknown option --bogus", "run", demo, "--bogus");
        assertRefused("--scale needs a value", "run", demo, "--scale");
        assertRefused("cluster tool not found", "run", demo, "--cluster-tool", "/nonexistent/needle-cluster");
        assertRefused("plugin jar not found", "run", demo, "--cluster-tool", tool, "--plugin-jar", "/nonexistent.jar");
    }
}
