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
    static String table(RunResult result) {
        List<PointResult> runs = result.runs();
        if (runs.isEmpty()) {
            return "(no results)";
        }
        List<String> variants = List.copyOf(runs.get(0).variants().keySet());
        boolean growing = runs.stream().map(Report::partitions).distinct().count() > 1;
        StringBuilder b = new StringBuilder();
        b.append(result.title()).append('\n');
        b.append("median (p99) latency in ms per ")
                .append(runs.get(0).insert() != null ? "insert" : "lookup")
                .append('\n');
        b.append(String.format("%-58s", "run"));
        for (String v : variants) {
            b.append(String.format(" %22s", v));
        }
        b.append(String.format(" %16s %15s%n", "stock/cuckoo p50", "cuckoo skipped"));
        for (PointResult r : runs) {
            String mode = r.lookup() == null ? null : r.lookup().deleteMode();
            String label = r.cache() + (mode == null ? "" : ", " + mode + " deletes") + ", " + r.point()
                    + (growing ? String.format(", %,d partitions", partitions(r)) : "");
            b.append(String.format("%-58s", label));
            for (String v : variants) {
                LatencyStats s = r.variants().get(v).latency();
                b.append(String.format(" %22s", ms(s.p50Us()) + " (" + ms(s.p99Us()) + ")"));
            }
            Double ratio = r.ratios() == null ? null : r.ratios().ratioP50StockOverCuckoo();
            VariantResult cuckoo = r.variants().get("needle-cuckoo");
            // Every lookup node 1 answered without a read: by its storage filter or by its copies.
            String skipped = cuckoo == null || cuckoo.needle() == null
                    ? "-"
                    : String.format(
                            "%.1f%%",
                            100.0
                                    * cuckoo.needle().needleSkipped()
                                    / cuckoo.latency().count());
            b.append(String.format(
                    " %16s %15s%n",
                    ratio == null ? "-" : String.format("%.2fx", ratio), r.insert() != null ? "-" : skipped));
        }
        return b.toString();
    }

    /** The partitions a lookup point measured over; null for an insert point. */
    private static Integer partitions(PointResult r) {
        return r.lookup() == null ? null : r.lookup().partitions();
    }

    private static String ms(double us) {
        return String.format("%.3f", us / 1000.0);
    }
}
