package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
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
        Map<String, Object> s = Runner.stats(latencies(values), 2_000_000_000L);
        assertEquals(100L, s.get("count"));
        assertEquals(50.5, (double) s.get("mean_us"), 0.1);
        assertEquals(1.0, (double) s.get("min_us"), 0.01);
        assertEquals(50.0, (double) s.get("p50_us"), 0.1);
        assertEquals(95.0, (double) s.get("p95_us"), 0.1);
        assertEquals(99.0, (double) s.get("p99_us"), 0.1);
        assertEquals(100.0, (double) s.get("max_us"), 0.1);
        assertEquals(50.0, (double) s.get("throughput_ops_s"), 0.01);
        assertTrue(((String) s.get("hdr_histogram_ns")).length() > 10);
    }

    @Test
    void ratiosAreStockOverNeedle() {
        Map<String, Object> byVariant = new LinkedHashMap<>();
        byVariant.put("stock", Runner.stats(latencies(400, 400, 400), 1));
        byVariant.put("needle-bloom", Runner.stats(latencies(400, 400, 400), 1));
        byVariant.put("needle-cuckoo", Runner.stats(latencies(100, 100, 100), 1));
        Map<String, Object> run = new LinkedHashMap<>();
        Runner.addRatios(run, byVariant);
        assertEquals(4.0, (double) run.get("ratio_p50_stock_over_cuckoo"), 0.01);
        assertEquals(1.0, (double) run.get("ratio_p50_stock_over_bloom"), 0.01);
        assertEquals(4.0, (double) run.get("ratio_p99_stock_over_cuckoo"), 0.01);
    }

    @Test
    void tableShowsEveryRunAndWrongResultsAreCounted() {
        Map<String, Object> byVariant = new LinkedHashMap<>();
        for (String v : List.of("stock", "needle-cuckoo")) {
            Map<String, Object> s = Runner.stats(latencies(500, 600), 1);
            s.put("wrong_results", v.equals("stock") ? 0L : 3L);
            byVariant.put(v, s);
        }
        Map<String, Object> run = new LinkedHashMap<>();
        run.put("point", "100% deleted");
        run.put("cache", "warm");
        run.put("delete_mode", "row");
        run.put("partitions", 10);
        run.put("variants", byVariant);
        Runner.addRatios(run, byVariant);
        List<Object> runs = new ArrayList<>(List.of(run));
        Map<String, Object> result = new LinkedHashMap<>();
        result.put("title", "T");
        result.put("runs", runs);
        String table = Report.table(result);
        assertTrue(table.contains("warm, row deletes, 100% deleted"), table);
        assertTrue(table.contains("1.00x"), table);
        assertEquals(3, Main.wrongResults(result));
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
