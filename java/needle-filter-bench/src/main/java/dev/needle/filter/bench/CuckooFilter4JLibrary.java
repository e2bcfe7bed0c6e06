package dev.needle.filter.bench;

import com.google.common.hash.Funnels;
import java.io.IOException;
import java.nio.file.Path;

/** CuckooFilter4J 1.0.2 as a benchmark {@link Library} row. */
final class CuckooFilter4JLibrary {
    private CuckooFilter4JLibrary() {}

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
}
