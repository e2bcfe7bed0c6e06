package dev.needle.bench;

import java.util.List;
import java.util.Map;

/** Plain-text tables of results: what the harness prints while and after it runs. */
final class Report {
    private Report() {}

    /** One line per measured point: median and p99 of each variant, and stock / Needle-cuckoo. */
    static String line(String where, Map<String, VariantResult> byVariant) {
        StringBuilder b = new StringBuilder(String.format("  %-48s", where));
        for (Map.Entry<String, VariantResult> v : byVariant.entrySet()) {
            LatencyStats s = v.getValue().latency();
            b.append(String.format("  %s p50 %s p99 %s", v.getKey(), ms(s.p50Us()), ms(s.p99Us())));
        }
        return b.toString();
    }

    /** The side-by-side table of a whole result document. */
    static String table(Map<String, Object> result) {
        @SuppressWarnings("unchecked")
        List<Map<String, Object>> runs = (List<Map<String, Object>>) result.get("runs");
        if (runs.isEmpty()) {
            return "(no results)";
        }
        @SuppressWarnings("unchecked")
        List<String> variants = List.copyOf(((Map<String, Object>) runs.get(0).get("variants")).keySet());
        boolean growing = runs.stream().map(r -> r.get("partitions")).distinct().count() > 1;
        StringBuilder b = new StringBuilder();
        b.append(result.get("title")).append('\n');
        b.append("median (p99) latency in ms per ")
                .append(runs.get(0).containsKey("load") ? "insert" : "lookup")
                .append('\n');
        b.append(String.format("%-58s", "run"));
        for (String v : variants) {
            b.append(String.format(" %22s", v));
        }
        b.append(String.format(" %16s %15s%n", "stock/cuckoo p50", "cuckoo skipped"));
        for (Map<String, Object> r : runs) {
            Object mode = r.get("delete_mode");
            String label = r.get("cache") + (mode == null ? "" : ", " + mode + " deletes") + ", " + r.get("point")
                    + (growing ? String.format(", %,d partitions", ((Number) r.get("partitions")).longValue()) : "");
            b.append(String.format("%-58s", label));
            Map<?, ?> byVariant = (Map<?, ?>) r.get("variants");
            for (String v : variants) {
                Map<?, ?> s = (Map<?, ?>) byVariant.get(v);
                b.append(String.format(" %22s", ms(s.get("p50_us")) + " (" + ms(s.get("p99_us")) + ")"));
            }
            Object ratio = r.get("ratio_p50_stock_over_cuckoo");
            Map<?, ?> cuckoo = (Map<?, ?>) byVariant.get("needle-cuckoo");
            // Every lookup node 1 answered without a read: by its storage filter or by its copies.
            String skipped = cuckoo == null || cuckoo.get("needle_skipped") == null
                    ? "-"
                    : String.format(
                            "%.1f%%",
                            100.0
                                    * ((Number) cuckoo.get("needle_skipped")).doubleValue()
                                    / ((Number) cuckoo.get("count")).doubleValue());
            b.append(String.format(
                    " %16s %15s%n",
                    ratio == null ? "-" : String.format("%.2fx", ((Number) ratio).doubleValue()),
                    r.containsKey("load") ? "-" : skipped));
        }
        return b.toString();
    }

    private static String ms(Object us) {
        return String.format("%.3f", ((Number) us).doubleValue() / 1000.0);
    }
}
