package dev.needle.filter.bench;

import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * One filter of one library, built from a key array, behind a tiny common surface so the
 * benchmarks are the same loop for every library. Each subclass calls the library's own API
 * directly; a JMH fork only ever loads one subclass, so the calls stay monomorphic and inline.
 *
 * <p>Every library gets the same random 64-bit {@code long} keys. Needle's operations take a
 * precomputed 64-bit key hash ({@code insertHash(long)}), so Needle does no hashing of its own
 * in the main rows; the competitors hash the long internally (fastfilter: a 64-bit mixer;
 * Guava and CuckooFilter4J: Murmur3-128 through a Funnel, with boxing). The row
 * {@code needle-cuckoo-xxh64} shows Needle paying for XXH64 of the key's 8 bytes, as a caller
 * with raw keys would.
 */
public abstract class Library {
    /** Libraries with an insert, lookup and space row. */
    public static final List<String> BUILDABLE = List.of(
            "needle-cuckoo",
            "needle-deletion-aware",
            "needle-adaptive",
            "needle-bloom",
            "cuckoofilter4j",
            "fastfilter-cuckoo",
            "fastfilter-bloom",
            "fastfilter-blockedbloom",
            "guava-bloom");
    /** Lookup-only variants of needle-cuckoo (same filter, different call path). */
    public static final List<String> LOOKUP_VARIANTS = List.of("needle-cuckoo-batch", "needle-cuckoo-xxh64");
    /** Libraries that can delete a key. */
    public static final List<String> DELETABLE =
            List.of("needle-cuckoo", "needle-deletion-aware", "needle-adaptive", "cuckoofilter4j");

    /**
     * The libraries of a phase of {@code bench/jvm-filters/run.sh}, for its JMH runs: {@code
     * lookup} (every row), {@code insert} and {@code space} (the buildable ones), {@code delete}.
     * These lists are the one home of which library runs where: the benchmarks' {@code @Param}
     * lists and the summary's (Python) are checked against them.
     */
    public static List<String> forPhase(String phase) {
        return switch (phase) {
            case "lookup" -> {
                List<String> all = new ArrayList<>(BUILDABLE);
                all.addAll(1, LOOKUP_VARIANTS); // beside the filter they call
                yield all;
            }
            case "insert", "space" -> BUILDABLE;
            case "delete" -> DELETABLE;
            default ->
                throw new IllegalArgumentException("unknown phase '" + phase + "': lookup, insert, space or delete");
        };
    }

    /** Prints the libraries of the phase named by the argument, comma-separated ({@link #forPhase}). */
    public static void main(String[] args) {
        if (args.length != 1) {
            System.err.println("usage: Library lookup|insert|space|delete");
            System.exit(2);
        }
        System.out.println(String.join(",", forPhase(args[0])));
    }

    final int n;
    final double fpp;

    Library(int n, double fpp) {
        this.n = n;
        this.fpp = fpp;
    }

    /** A new, empty (not yet built) filter of the named library for {@code n} keys at target rate {@code fpp}. */
    public static Library create(String name, int n, double fpp) {
        switch (name) {
            case "needle-cuckoo":
                return new NeedleLibraries.NeedleCuckoo(n, fpp);
            case "needle-cuckoo-batch":
                return new NeedleLibraries.NeedleCuckooBatch(n, fpp);
            case "needle-cuckoo-xxh64":
                return new NeedleLibraries.NeedleCuckooXxh64(n, fpp);
            case "needle-deletion-aware":
                return new NeedleLibraries.NeedleDeletionAware(n, fpp);
            case "needle-adaptive":
                return new NeedleLibraries.NeedleAdaptive(n, fpp);
            case "needle-bloom":
                return new NeedleLibraries.NeedleBloom(n, fpp);
            case "cuckoofilter4j":
                return new CuckooFilter4JLibrary.CuckooFilter4J(n, fpp);
            case "fastfilter-cuckoo":
                return new FastFilterLibraries.FastFilterCuckoo(n, fpp);
            case "fastfilter-bloom":
                return new FastFilterLibraries.FastFilterBloom(n, fpp);
            case "fastfilter-blockedbloom":
                return new FastFilterLibraries.FastFilterBlockedBloom(n, fpp);
            case "guava-bloom":
                return new GuavaBloomLibrary.GuavaBloom(n, fpp);
            default:
                throw new IllegalArgumentException("unknown library " + name);
        }
    }

    /** Creates the filter and adds every key (creation included: fastfilter can only build that way). Returns failed inserts. */
    public abstract long build(long[] keys);

    public abstract boolean contains(long key);

    /** Number of keys in {@code keys[from, to)} the filter reports as present. */
    public int countContained(long[] keys, int from, int to) {
        int hits = 0;
        for (int i = from; i < to; i++) {
            if (contains(keys[i])) {
                hits++;
            }
        }
        return hits;
    }

    public boolean supportsDelete() {
        return false;
    }

    /** Deletes one inserted key; true when the library reports success. */
    public boolean delete(long key) {
        throw new UnsupportedOperationException(getClass().getSimpleName() + " cannot delete");
    }

    /** The built filter object (for Blackhole). */
    public abstract Object filter();

    /** Bits of the filter from the library's own size API. */
    public abstract long sizeBits();

    /** Which API {@link #sizeBits()} comes from. */
    public abstract String sizeSource();

    /** Occupied slots / slots for cuckoo filters; null for Bloom filters. */
    public Double load() {
        return null;
    }

    /** Fingerprint width in bits (cuckoo filters); null for Bloom filters. */
    public Integer fingerprintBits() {
        return null;
    }

    /** Bits per slot including any state/selector bits (cuckoo filters); null otherwise. */
    public Integer slotBits() {
        return fingerprintBits();
    }

    /** Extra memory outside the filter proper (the adaptive filter's key store), in bits; 0 if none. */
    public long extraBits() {
        return 0;
    }

    /** Entries the library reports holding, or -1 when it has no such API. */
    public long count() {
        return -1;
    }

    /** Which concrete class / shape was used. */
    public abstract String variant();

    /**
     * Writes the built filter to {@code file} with the library's own serialization, so that another
     * JVM can load it instead of building it again (see {@link FilterCache}); false when the
     * library has no serialization (fastfilter), in which case the filter is rebuilt.
     */
    public boolean saveTo(Path file) throws IOException {
        return false;
    }

    /** Loads a filter written by {@link #saveTo}; false when the library cannot. */
    public boolean loadFrom(Path file) throws IOException {
        return false;
    }

    static void writeJava(Object o, Path file) throws IOException {
        try (ObjectOutputStream out =
                new ObjectOutputStream(new BufferedOutputStream(Files.newOutputStream(file), 1 << 16))) {
            out.writeObject(o);
        }
    }

    static Object readJava(Path file) throws IOException {
        try (ObjectInputStream in =
                new ObjectInputStream(new BufferedInputStream(Files.newInputStream(file), 1 << 16))) {
            return in.readObject();
        } catch (ClassNotFoundException e) {
            throw new IOException(e);
        }
    }

    /** The -ln(ε)/ln²2 bits per key of an optimal Bloom filter, used to size the fastfilter Bloom filters. */
    static double optimalBloomBitsPerKey(double fpp) {
        return -Math.log(fpp) / (Math.log(2) * Math.log(2));
    }
}
