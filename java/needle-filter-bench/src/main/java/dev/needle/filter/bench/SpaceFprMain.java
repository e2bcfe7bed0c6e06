package dev.needle.filter.bench;

import dev.needle.filter.CuckooFilter;
import dev.needle.filter.DeletionAwareCuckooFilter;
import dev.needle.filter.KeyState;
import java.io.IOException;
import java.io.PrintWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.SplittableRandom;

/**
 * Space, false-positive rate, load and correctness of every library, outside JMH (nothing here is
 * a timing). For each library × n × target rate it builds a full filter from the benchmark keys
 * (or loads the one the insert benchmark built, see {@link FilterCache}), then records:
 * <ul>
 *   <li>bits per key from the library's own size API (filter bits × 1 / n);</li>
 *   <li>false negatives: every inserted key is looked up (for Needle's cuckoo filter also with
 *       {@code mightContainBatch}; for the deletion-aware filter, anything but LIVE counts);</li>
 *   <li>the false-positive rate over {@code --absent} keys, each checked exactly not to be inserted;</li>
 *   <li>load, fingerprint bits, failed inserts, and, for libraries that delete, whether deleting
 *       every inserted key succeeds and leaves the filter empty (up to {@code --delete-check-max-n} keys).</li>
 * </ul>
 *
 * <pre>
 * java -Xmx8g -cp needle-filter-benchmarks.jar dev.needle.filter.bench.SpaceFprMain \
 *     --n 1000000,50000000 --fpp 0.01,0.001,0.0001 --absent 1000000 --out space.json
 * </pre>
 */
public final class SpaceFprMain {
    private SpaceFprMain() {}

    public static void main(String[] args) throws IOException {
        List<Integer> ns = List.of(1_000_000, 50_000_000);
        List<Double> fpps = List.of(0.01, 0.001, 0.0001);
        List<String> libs = Library.BUILDABLE;
        int absentCount = 1_000_000;
        Path out = Path.of("space.json");
        for (int i = 0; i < args.length; i += 2) {
            String v = args[i + 1];
            switch (args[i]) {
                case "--n":
                    ns = Arrays.stream(v.split(",")).map(Integer::valueOf).toList();
                    break;
                case "--fpp":
                    fpps = Arrays.stream(v.split(",")).map(Double::valueOf).toList();
                    break;
                case "--libs":
                    libs = Arrays.asList(v.split(","));
                    break;
                case "--absent":
                    absentCount = Integer.parseInt(v);
                    break;
                case "--out":
                    out = Path.of(v);
                    break;
                case "--delete-check-max-n":
                    deleteCheckMaxN = Long.parseLong(v);
                    break;
                default:
                    throw new IllegalArgumentException("unknown option " + args[i]);
            }
        }
        List<String> rows = new ArrayList<>();
        for (int n : ns) {
            long[] keys = Keys.inserted(n);
            long[] sorted = keys.clone();
            Arrays.parallelSort(sorted);
            long[] absent = absentKeys(sorted, absentCount);
            sorted = null;
            for (double fpp : fpps) {
                for (String name : libs) {
                    String row = measure(name, n, fpp, keys, absent);
                    System.out.println(row);
                    rows.add(row);
                    System.gc();
                }
            }
        }
        try (PrintWriter w = new PrintWriter(Files.newBufferedWriter(out, StandardCharsets.UTF_8))) {
            w.println("[");
            for (int i = 0; i < rows.size(); i++) {
                w.println("  " + rows.get(i) + (i + 1 < rows.size() ? "," : ""));
            }
            w.println("]");
        }
    }

    /** The first {@code count} keys of the absent-key stream that are not inserted keys (checked exactly). */
    static long[] absentKeys(long[] sortedInserted, int count) {
        SplittableRandom r = new SplittableRandom(Keys.ABSENT_SEED);
        long[] a = new long[count];
        int i = 0;
        while (i < count) {
            long k = r.nextLong();
            if (Arrays.binarySearch(sortedInserted, k) < 0) {
                a[i++] = k;
            }
        }
        return a;
    }

    /** Largest n for which every key is also deleted to check that deletes work (it costs a full pass). */
    static long deleteCheckMaxN = Long.MAX_VALUE;

    static String measure(String name, int n, double fpp, long[] keys, long[] absent) {
        Library lib = Library.create(name, n, fpp);
        long t0 = System.nanoTime();
        long failedInserts = FilterCache.loadOrBuild(lib, name, n, fpp, keys);
        double fillSeconds = (System.nanoTime() - t0) / 1e9;

        long falseNegatives = 0;
        for (long k : keys) {
            if (!lib.contains(k)) {
                falseNegatives++;
            }
        }
        long falseNegativesBatch = -1;
        if (lib.filter() instanceof CuckooFilter cf) {
            boolean[] found = new boolean[keys.length];
            cf.mightContainBatch(keys, 0, keys.length, found);
            falseNegativesBatch = 0;
            for (boolean b : found) {
                if (!b) {
                    falseNegativesBatch++;
                }
            }
        }
        long notLive = -1;
        if (lib.filter() instanceof DeletionAwareCuckooFilter da) {
            notLive = 0;
            for (long k : keys) {
                if (da.lookupHash(k) != KeyState.LIVE) {
                    notLive++;
                }
            }
        }
        long falsePositives = 0;
        for (long k : absent) {
            if (lib.contains(k)) {
                falsePositives++;
            }
        }
        long sizeBits = lib.sizeBits();
        Double load = lib.load();
        Integer fpBits = lib.fingerprintBits();
        Integer slotBits = lib.slotBits();
        long count = lib.count();
        String variant = lib.variant();

        long failedDeletes = -1;
        long countAfterDelete = -1;
        long positivesAfterDelete = -1;
        if (lib.supportsDelete() && n <= deleteCheckMaxN) {
            failedDeletes = 0;
            for (long k : keys) {
                if (!lib.delete(k)) {
                    failedDeletes++;
                }
            }
            countAfterDelete = lib.count();
            positivesAfterDelete = 0;
            for (long k : keys) {
                if (lib.contains(k)) {
                    positivesAfterDelete++;
                }
            }
        }

        StringBuilder s = new StringBuilder("{");
        field(s, "library", name);
        field(s, "n", n);
        field(s, "fpp", fpp);
        field(s, "variant", variant);
        field(s, "size_bits", sizeBits);
        field(s, "size_source", lib.sizeSource());
        field(s, "bits_per_key", (double) sizeBits / n);
        field(s, "extra_bits_per_key", (double) lib.extraBits() / n);
        field(s, "load", load);
        field(s, "fingerprint_bits", fpBits);
        field(s, "slot_bits", slotBits);
        field(s, "count", count);
        field(s, "failed_inserts", failedInserts);
        field(s, "false_negatives", falseNegatives);
        field(s, "false_negatives_batch_api", falseNegativesBatch < 0 ? null : falseNegativesBatch);
        field(s, "not_live_three_state", notLive < 0 ? null : notLive);
        field(s, "absent_keys", absent.length);
        field(s, "false_positives", falsePositives);
        field(s, "fpr", (double) falsePositives / absent.length);
        field(s, "failed_deletes", failedDeletes < 0 ? null : failedDeletes);
        field(s, "count_after_delete_all", countAfterDelete < 0 ? null : countAfterDelete);
        field(s, "positives_after_delete_all", positivesAfterDelete < 0 ? null : positivesAfterDelete);
        field(s, "fill_seconds_untimed", fillSeconds);
        s.setLength(s.length() - 2);
        return s.append('}').toString();
    }

    private static void field(StringBuilder s, String k, Object v) {
        s.append('"').append(k).append("\": ");
        if (v == null) {
            s.append("null");
        } else if (v instanceof String str) {
            s.append('"')
                    .append(str.replace("\\", "\\\\").replace("\"", "\\\""))
                    .append('"');
        } else if (v instanceof Double d) {
            s.append(d.isNaN() || d.isInfinite() ? "null" : String.format(Locale.ROOT, "%.9g", d));
        } else {
            s.append(v);
        }
        s.append(", ");
    }
}
