package dev.needle.filter.bench;

import com.google.common.hash.Funnels;
import com.google.common.io.CountingOutputStream;
import dev.needle.filter.AdaptiveCuckooFilter;
import dev.needle.filter.BloomFilter;
import dev.needle.filter.CuckooFilter;
import dev.needle.filter.DeletionAwareCuckooFilter;
import dev.needle.filter.FilterIO;
import dev.needle.filter.Hashing;
import dev.needle.filter.KeyState;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import org.fastfilter.bloom.BlockedBloom;
import org.fastfilter.cuckoo.Cuckoo16;
import org.fastfilter.cuckoo.Cuckoo8;

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
                return new NeedleCuckoo(n, fpp);
            case "needle-cuckoo-batch":
                return new NeedleCuckooBatch(n, fpp);
            case "needle-cuckoo-xxh64":
                return new NeedleCuckooXxh64(n, fpp);
            case "needle-deletion-aware":
                return new NeedleDeletionAware(n, fpp);
            case "needle-adaptive":
                return new NeedleAdaptive(n, fpp);
            case "needle-bloom":
                return new NeedleBloom(n, fpp);
            case "cuckoofilter4j":
                return new CuckooFilter4J(n, fpp);
            case "fastfilter-cuckoo":
                return new FastFilterCuckoo(n, fpp);
            case "fastfilter-bloom":
                return new FastFilterBloom(n, fpp);
            case "fastfilter-blockedbloom":
                return new FastFilterBlockedBloom(n, fpp);
            case "guava-bloom":
                return new GuavaBloom(n, fpp);
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

    // ---- Needle --------------------------------------------------------------------------------

    /** What every Needle filter shares here: its own serialization, size and count APIs. */
    abstract static class NeedleLibrary<F extends dev.needle.filter.Filter> extends Library {
        F f;
        private final Class<F> type;

        NeedleLibrary(int n, double fpp, Class<F> type) {
            super(n, fpp);
            this.type = type;
        }

        @Override
        public boolean saveTo(Path file) throws IOException {
            FilterIO.write(f, file);
            return true;
        }

        @Override
        public boolean loadFrom(Path file) throws IOException {
            f = type.cast(FilterIO.read(file));
            return true;
        }

        /** A new, empty filter sized for {@code n} keys at {@code fpp}. */
        abstract F create();

        /** Inserts one key (a 64-bit hash) into {@code g}; false when the filter is full. */
        abstract boolean insert(F g, long key);

        /** Builds a new filter from {@code keys}; returns how many inserts failed. */
        @Override
        public long build(long[] keys) {
            F g = create();
            long failed = 0;
            for (long k : keys) {
                if (!insert(g, k)) {
                    failed++;
                }
            }
            f = g;
            return failed;
        }

        @Override
        public Object filter() {
            return f;
        }

        @Override
        public long sizeBits() {
            return f.sizeInBytes() * 8;
        }

        @Override
        public String sizeSource() {
            return type.getSimpleName() + ".sizeInBytes()";
        }

        @Override
        public long count() {
            return f.count();
        }
    }

    static class NeedleCuckoo extends NeedleLibrary<CuckooFilter> {

        NeedleCuckoo(int n, double fpp) {
            super(n, fpp, CuckooFilter.class);
        }

        long hashOf(long key) {
            return key;
        }

        @Override
        CuckooFilter create() {
            return CuckooFilter.create(n, fpp);
        }

        @Override
        boolean insert(CuckooFilter g, long key) {
            return g.insertHash(hashOf(key));
        }

        @Override
        public boolean contains(long key) {
            return f.mightContainHash(hashOf(key));
        }

        @Override
        public boolean supportsDelete() {
            return true;
        }

        @Override
        public boolean delete(long key) {
            return f.deleteHash(hashOf(key));
        }

        @Override
        public Double load() {
            return f.load();
        }

        @Override
        public Integer fingerprintBits() {
            return f.fingerprintBits();
        }

        @Override
        public String variant() {
            return "CuckooFilter b=4 f=" + f.fingerprintBits() + " buckets=" + f.numBuckets();
        }
    }

    /** Same filter, looked up with {@code mightContainBatch} (one optimistic-lock stamp per batch). */
    static final class NeedleCuckooBatch extends NeedleCuckoo {
        private boolean[] out;

        NeedleCuckooBatch(int n, double fpp) {
            super(n, fpp);
        }

        @Override
        public int countContained(long[] keys, int from, int to) {
            // mightContainBatch writes out[i] at the same index i as hashes[i], so out spans the key array.
            if (out == null || out.length < keys.length) {
                out = new boolean[keys.length];
            }
            f.mightContainBatch(keys, from, to, out);
            int hits = 0;
            for (int i = from; i < to; i++) {
                if (out[i]) {
                    hits++;
                }
            }
            return hits;
        }

        @Override
        public String variant() {
            return super.variant() + " via mightContainBatch";
        }
    }

    /** Same filter, keys hashed with Needle's XXH64 of their 8 little-endian bytes before every call. */
    static final class NeedleCuckooXxh64 extends NeedleCuckoo {
        private final byte[] buf = new byte[8];

        NeedleCuckooXxh64(int n, double fpp) {
            super(n, fpp);
        }

        @Override
        long hashOf(long key) {
            byte[] b = buf;
            for (int i = 0; i < 8; i++) {
                b[i] = (byte) (key >>> (8 * i));
            }
            return Hashing.xxh64(b, 0, 8, 0L);
        }

        @Override
        public String variant() {
            return super.variant() + " with XXH64 of the 8-byte key per call";
        }
    }

    static final class NeedleDeletionAware extends NeedleLibrary<DeletionAwareCuckooFilter> {

        NeedleDeletionAware(int n, double fpp) {
            super(n, fpp, DeletionAwareCuckooFilter.class);
        }

        @Override
        DeletionAwareCuckooFilter create() {
            return DeletionAwareCuckooFilter.create(n, fpp);
        }

        @Override
        boolean insert(DeletionAwareCuckooFilter g, long key) {
            return g.insertHash(key);
        }

        /** Present = LIVE or DELETED (anything but ABSENT), the answer that makes a read go to disk. */
        @Override
        public boolean contains(long key) {
            return f.lookupHash(key) != KeyState.ABSENT;
        }

        /** Removes the live entry (deleteHash); markDeletedHash, which keeps it as DELETED, costs the same lookup and one lane write. */
        @Override
        public boolean supportsDelete() {
            return true;
        }

        @Override
        public boolean delete(long key) {
            return f.deleteHash(key);
        }

        @Override
        public Double load() {
            return f.load();
        }

        @Override
        public Integer fingerprintBits() {
            return f.fingerprintBits();
        }

        @Override
        public Integer slotBits() {
            return f.fingerprintBits() + 1;
        }

        @Override
        public String variant() {
            return "DeletionAwareCuckooFilter b=4 f=" + f.fingerprintBits() + "+1 state bit";
        }
    }

    static final class NeedleAdaptive extends NeedleLibrary<AdaptiveCuckooFilter> {

        NeedleAdaptive(int n, double fpp) {
            super(n, fpp, AdaptiveCuckooFilter.class);
        }

        @Override
        AdaptiveCuckooFilter create() {
            return AdaptiveCuckooFilter.create(n, fpp);
        }

        @Override
        boolean insert(AdaptiveCuckooFilter g, long key) {
            return g.insertHash(key);
        }

        @Override
        public boolean contains(long key) {
            return f.mightContainHash(key);
        }

        @Override
        public boolean supportsDelete() {
            return true;
        }

        @Override
        public boolean delete(long key) {
            return f.deleteHash(key);
        }

        @Override
        public long extraBits() {
            return f.keyStoreBytes() * 8;
        }

        @Override
        public Double load() {
            return f.load();
        }

        @Override
        public Integer fingerprintBits() {
            return f.fingerprintBits();
        }

        @Override
        public Integer slotBits() {
            return f.fingerprintBits() + 2;
        }

        @Override
        public String variant() {
            return "AdaptiveCuckooFilter b=4 f=" + f.fingerprintBits() + "+2 selector bits, 64-bit key store";
        }
    }

    static final class NeedleBloom extends NeedleLibrary<BloomFilter> {

        NeedleBloom(int n, double fpp) {
            super(n, fpp, BloomFilter.class);
        }

        @Override
        BloomFilter create() {
            return BloomFilter.create(n, fpp);
        }

        @Override
        boolean insert(BloomFilter g, long key) {
            return g.insertHash(key);
        }

        @Override
        public boolean contains(long key) {
            return f.mightContainHash(key);
        }

        @Override
        public String variant() {
            return "BloomFilter k=" + f.numHashes() + " bits=" + f.numBits();
        }
    }

    // ---- CuckooFilter4J 1.0.2 -----------------------------------------------------------------

    static final class CuckooFilter4J extends Library {
        com.github.mgunlogson.cuckoofilter4j.CuckooFilter<Long> f;

        @Override
        public boolean saveTo(Path file) throws IOException {
            writeJava(f, file);
            return true;
        }

        @Override
        @SuppressWarnings("unchecked")
        public boolean loadFrom(Path file) throws IOException {
            f = (com.github.mgunlogson.cuckoofilter4j.CuckooFilter<Long>) readJava(file);
            return true;
        }

        CuckooFilter4J(int n, double fpp) {
            super(n, fpp);
        }

        @Override
        public long build(long[] keys) {
            com.github.mgunlogson.cuckoofilter4j.CuckooFilter<Long> g =
                    new com.github.mgunlogson.cuckoofilter4j.CuckooFilter.Builder<>(Funnels.longFunnel(), (long) n)
                            .withFalsePositiveRate(fpp)
                            .build();
            long failed = 0;
            for (long k : keys) {
                if (!g.put(k)) {
                    failed++;
                }
            }
            f = g;
            return failed;
        }

        @Override
        public boolean contains(long key) {
            return f.mightContain(key);
        }

        @Override
        public boolean supportsDelete() {
            return true;
        }

        @Override
        public boolean delete(long key) {
            return f.delete(key);
        }

        @Override
        public Object filter() {
            return f;
        }

        /** getStorageSize() is the bit length of its table (FilterTable's LongBitSet), read with javap. */
        @Override
        public long sizeBits() {
            return f.getStorageSize();
        }

        @Override
        public String sizeSource() {
            return "CuckooFilter.getStorageSize() (bits of the bucket table)";
        }

        @Override
        public Double load() {
            return f.getLoadFactor();
        }

        @Override
        public Integer fingerprintBits() {
            return (int) (f.getStorageSize() / f.getActualCapacity());
        }

        @Override
        public long count() {
            return f.getCount();
        }

        @Override
        public String variant() {
            return "CuckooFilter4J b=4 tag=" + fingerprintBits() + " buckets=" + f.getActualCapacity() / 4
                    + " (power of two)";
        }
    }

    // ---- fastfilter_java 1.0.2 ----------------------------------------------------------------

    /**
     * fastfilter offers fixed fingerprints: Cuckoo8 (8 bits), Cuckoo16 (16 bits), CuckooPlus8/16
     * (6/14-bit fingerprints plus 2 flag bits in the same 8/16-bit slot). All use 4 slots per
     * bucket and size for load 0.95 (Plus: 0.94). The variant is the smallest slot whose
     * predicted rate 1-(1-2^-f)^(2·4·α) meets the target, the lower rate winning a tie in slot
     * size; when none meets it, the one with the lowest predicted rate (reported as unmet).
     */
    public static String fastFilterCuckooVariant(double fpp) {
        double cuckoo8 = predictedCuckooFpp(8, 0.95);
        return cuckoo8 <= fpp ? "Cuckoo8" : "Cuckoo16";
    }

    static double predictedCuckooFpp(int f, double load) {
        return -Math.expm1(2 * 4 * load * Math.log1p(-Math.pow(2, -f)));
    }

    /** Whether the chosen fastfilter variant's predicted rate meets the target. */
    public static boolean fastFilterCuckooMeetsTarget(double fpp) {
        return predictedCuckooFpp(fastFilterCuckooVariant(fpp).equals("Cuckoo8") ? 8 : 16, 0.95) <= fpp;
    }

    static final class FastFilterCuckoo extends Library {
        org.fastfilter.Filter f;
        final String variant;

        FastFilterCuckoo(int n, double fpp) {
            super(n, fpp);
            variant = fastFilterCuckooVariant(fpp);
        }

        @Override
        public long build(long[] keys) {
            // construct() sizes for load 0.95 and retries with a new seed if an insert fails.
            f = variant.equals("Cuckoo8") ? Cuckoo8.construct(keys) : Cuckoo16.construct(keys);
            return 0;
        }

        @Override
        public boolean contains(long key) {
            return f.mayContain(key);
        }

        @Override
        public Object filter() {
            return f;
        }

        @Override
        public long sizeBits() {
            return f.getBitCount();
        }

        @Override
        public String sizeSource() {
            return "Filter.getBitCount()";
        }

        @Override
        public Double load() {
            return (double) n / (f.getBitCount() / fingerprintBits());
        }

        @Override
        public Integer fingerprintBits() {
            return variant.equals("Cuckoo8") ? 8 : 16;
        }

        @Override
        public String variant() {
            return "fastfilter " + variant
                    + (fastFilterCuckooMeetsTarget(fpp)
                            ? ""
                            : " (no fastfilter cuckoo variant reaches this rate; closest)");
        }
    }

    static final class FastFilterBloom extends Library {
        org.fastfilter.bloom.Bloom f;

        FastFilterBloom(int n, double fpp) {
            super(n, fpp);
        }

        @Override
        public long build(long[] keys) {
            f = org.fastfilter.bloom.Bloom.construct(keys, optimalBloomBitsPerKey(fpp));
            return 0;
        }

        @Override
        public boolean contains(long key) {
            return f.mayContain(key);
        }

        @Override
        public Object filter() {
            return f;
        }

        @Override
        public long sizeBits() {
            return f.getBitCount();
        }

        @Override
        public String sizeSource() {
            return "Filter.getBitCount()";
        }

        @Override
        public String variant() {
            return String.format("fastfilter Bloom bitsPerKey=%.3f", optimalBloomBitsPerKey(fpp));
        }
    }

    static final class FastFilterBlockedBloom extends Library {
        BlockedBloom f;

        FastFilterBlockedBloom(int n, double fpp) {
            super(n, fpp);
        }

        static int bitsPerKey(double fpp) {
            return (int) Math.ceil(optimalBloomBitsPerKey(fpp));
        }

        @Override
        public long build(long[] keys) {
            f = BlockedBloom.construct(keys, bitsPerKey(fpp));
            return 0;
        }

        @Override
        public boolean contains(long key) {
            return f.mayContain(key);
        }

        @Override
        public Object filter() {
            return f;
        }

        @Override
        public long sizeBits() {
            return f.getBitCount();
        }

        @Override
        public String sizeSource() {
            return "Filter.getBitCount()";
        }

        @Override
        public String variant() {
            return "fastfilter BlockedBloom bitsPerKey=" + bitsPerKey(fpp) + " (int; ceil of the optimal Bloom size)";
        }
    }

    // ---- Guava --------------------------------------------------------------------------------

    static final class GuavaBloom extends Library {
        com.google.common.hash.BloomFilter<Long> f;

        @Override
        public boolean saveTo(Path file) throws IOException {
            try (OutputStream out = new BufferedOutputStream(Files.newOutputStream(file), 1 << 16)) {
                f.writeTo(out);
            }
            return true;
        }

        @Override
        public boolean loadFrom(Path file) throws IOException {
            try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
                f = com.google.common.hash.BloomFilter.readFrom(in, Funnels.longFunnel());
            }
            return true;
        }

        GuavaBloom(int n, double fpp) {
            super(n, fpp);
        }

        @Override
        public long build(long[] keys) {
            com.google.common.hash.BloomFilter<Long> g =
                    com.google.common.hash.BloomFilter.create(Funnels.longFunnel(), n, fpp);
            for (long k : keys) {
                g.put(k);
            }
            f = g;
            return 0;
        }

        @Override
        public boolean contains(long key) {
            return f.mightContain(key);
        }

        @Override
        public Object filter() {
            return f;
        }

        /** Guava has no size accessor: the size of its writeTo output (a 6-byte header plus the bit array). */
        @Override
        public long sizeBits() {
            try (CountingOutputStream out = new CountingOutputStream(OutputStream.nullOutputStream())) {
                f.writeTo(out);
                return out.getCount() * 8;
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }

        @Override
        public String sizeSource() {
            return "BloomFilter.writeTo() output length";
        }

        @Override
        public long count() {
            return f.approximateElementCount();
        }

        @Override
        public String variant() {
            return "Guava BloomFilter (MURMUR128_MITZ_64)";
        }
    }
}
