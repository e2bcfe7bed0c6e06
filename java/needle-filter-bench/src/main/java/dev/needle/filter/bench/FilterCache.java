package dev.needle.filter.bench;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;

/**
 * Built filters shared between the JVMs of one run, so that a 50M-key filter is built by the
 * insert benchmark (where the build is what is measured) and then loaded, not rebuilt, by the
 * lookup and delete benchmarks' unmeasured setup and by {@link SpaceFprMain}. Enabled by the
 * system property {@code needle.bench.cache} (a directory; run.sh sets it and empties it at the
 * end). Each library is saved with its own serialization (Needle: {@code FilterIO}, format v1;
 * Guava: {@code writeTo}; CuckooFilter4J: Java serialization); fastfilter has none, so its
 * filters are always rebuilt. Loading gives the same arrays a build gives, so lookups see the
 * same filter either way.
 */
public final class FilterCache {
    public static final String PROPERTY = "needle.bench.cache";

    private FilterCache() {}

    /** The cache directory, or null when caching is off. */
    static Path dir() {
        String d = System.getProperty(PROPERTY);
        return d == null || d.isEmpty() ? null : Path.of(d);
    }

    /** Lookup variants of needle-cuckoo hold the same filter as needle-cuckoo (except xxh64, whose keys differ). */
    static String filterName(String library) {
        return library.equals("needle-cuckoo-batch") ? "needle-cuckoo" : library;
    }

    static Path file(String library, int n, double fpp) {
        return dir().resolve(String.format(Locale.ROOT, "%s-%d-%s.filter", filterName(library), n, fpp));
    }

    /** Saves a built filter if caching is on and the library can; failures only cost a rebuild later. */
    public static void save(Library lib, String library, int n, double fpp, long failedInserts) {
        if (dir() == null) {
            return;
        }
        try {
            Files.createDirectories(dir());
            Path f = file(library, n, fpp);
            if (lib.saveTo(f)) {
                Files.writeString(f.resolveSibling(f.getFileName() + ".failed"), Long.toString(failedInserts));
            }
        } catch (IOException | RuntimeException e) {
            System.out.println("WARNING: could not cache " + library + " n=" + n + " fpp=" + fpp + ": " + e);
        }
    }

    /**
     * Fills {@code lib} from the cache when possible, otherwise builds it from {@code keys}.
     * Returns the failed inserts of the build that made the filter.
     */
    public static long loadOrBuild(Library lib, String library, int n, double fpp, long[] keys) {
        if (dir() != null) {
            Path f = file(library, n, fpp);
            Path failed = f.resolveSibling(f.getFileName() + ".failed");
            if (Files.exists(f) && Files.exists(failed)) {
                try {
                    if (lib.loadFrom(f)) {
                        System.out.println("filter loaded from " + f);
                        return Long.parseLong(Files.readString(failed).trim());
                    }
                } catch (IOException | RuntimeException e) {
                    System.out.println("WARNING: could not load " + f + ", building instead: " + e);
                }
            }
        }
        long failedInserts = lib.build(keys);
        save(lib, library, n, fpp, failedInserts);
        return failedInserts;
    }
}
