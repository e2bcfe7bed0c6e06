package dev.needle.filter.bench;

import com.google.common.hash.Funnels;
import com.google.common.io.CountingOutputStream;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;

/** Guava's Bloom filter as a benchmark {@link Library} row. */
final class GuavaBloomLibrary {
    private GuavaBloomLibrary() {}

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
