package dev.needle.filter.bench;

import dev.needle.filter.AdaptiveCuckooFilter;
import dev.needle.filter.BloomFilter;
import dev.needle.filter.CuckooFilter;
import dev.needle.filter.DeletionAwareCuckooFilter;
import dev.needle.filter.FilterIO;
import dev.needle.filter.Hashing;
import dev.needle.filter.KeyState;
import java.io.IOException;
import java.nio.file.Path;

/** Needle's own filters as benchmark {@link Library} rows: the cuckoo filter (and its batch and XXH64 lookup paths), the deletion-aware and adaptive filters, and the Bloom filter. */
final class NeedleLibraries {
    private NeedleLibraries() {}

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
}
