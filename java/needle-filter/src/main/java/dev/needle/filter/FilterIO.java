package dev.needle.filter;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * Reads and writes filters in format version 1, specified in {@code format/filter-v1.md}:
 * a 64-byte little-endian header ending in its own CRC32C, then the payload and its CRC32C.
 * The header is checked before anything is allocated, so a corrupt length can never make
 * the reader allocate or read more than the stated filter; a filter is never returned
 * unless every check passes.
 */
public final class FilterIO {
    /** "NDLF" as the first four bytes. */
    static final int MAGIC = 0x464C444E;
    /** The format version this build writes and reads. */
    public static final int VERSION = 1;
    /** Hash code 1: XXH64 with seed 0 over the key bytes. */
    static final int HASH_XXH64 = 1;

    static final int HEADER_BYTES = 64;
    /** The header's CRC32C covers bytes [0, 60) and sits in its last four bytes. */
    static final int HEADER_CRC_OFFSET = 60;

    private static final int CHUNK = 1 << 16;

    private FilterIO() {}

    // ---- writing --------------------------------------------------------------------------

    static void writeCuckoo(AbstractCuckooFilter f, OutputStream out) throws IOException {
        CuckooTable t = f.table;
        long third = f instanceof AdaptiveCuckooFilter a ? a.adaptationsUnlocked() : f.deletedEntries();
        long payload = cuckooPayloadBytes(t.dataWords(), t.stashSize, t.backing != null, t.slots());
        ByteBuffer h = header(
                f.kind(),
                t.fingerprintBits,
                t.slotsPerBucket,
                t.tagBits,
                t.stashCapacity,
                t.stashSize,
                t.numBuckets,
                t.occupied,
                third,
                t.rng,
                payload);
        out.write(h.array());
        PayloadWriter w = new PayloadWriter(out);
        for (int i = 0; i < t.dataWords(); i++) {
            w.putLong(t.words[i]);
        }
        for (int i = 0; i < t.stashSize; i++) {
            w.putLong(t.stashBucket[i] & 0xFFFFFFFFL);
            w.putLong(t.stashLane[i]);
        }
        if (t.backing != null) {
            for (long k : t.backing) {
                w.putLong(k);
            }
            for (int i = 0; i < t.stashSize; i++) {
                w.putLong(t.stashBacking[i]);
            }
        }
        w.finish();
    }

    static void writeBloom(BloomFilter f, OutputStream out) throws IOException {
        ByteBuffer h = header(
                FilterKind.BLOOM,
                0,
                0,
                0,
                0,
                f.numHashes,
                f.numBits,
                f.count,
                f.designKeys,
                0,
                (long) f.words.length * 8);
        out.write(h.array());
        PayloadWriter w = new PayloadWriter(out);
        for (long word : f.words) {
            w.putLong(word);
        }
        w.finish();
    }

    private static long cuckooPayloadBytes(long dataWords, int stashSize, boolean keyed, long slots) {
        long bytes = dataWords * 8 + stashSize * 16L;
        if (keyed) {
            bytes += (slots + stashSize) * 8;
        }
        return bytes;
    }

    private static ByteBuffer header(
            FilterKind kind,
            int f,
            int b,
            int tagBits,
            int stashCapacity,
            int stashOrHashes,
            long bucketsOrBits,
            long entries,
            long third,
            long rng,
            long payload) {
        ByteBuffer h = ByteBuffer.allocate(HEADER_BYTES).order(ByteOrder.LITTLE_ENDIAN);
        h.putInt(0, MAGIC);
        h.putShort(4, (short) VERSION);
        h.put(6, (byte) kind.code);
        h.put(7, (byte) HASH_XXH64);
        h.put(8, (byte) f);
        h.put(9, (byte) b);
        h.put(10, (byte) tagBits);
        h.put(11, (byte) stashCapacity);
        h.putInt(12, stashOrHashes);
        h.putLong(16, bucketsOrBits);
        h.putLong(24, entries);
        h.putLong(32, third);
        h.putLong(40, rng);
        h.putLong(48, payload);
        CRC32C crc = new CRC32C();
        crc.update(h.array(), 0, HEADER_CRC_OFFSET);
        h.putInt(HEADER_CRC_OFFSET, (int) crc.getValue());
        return h;
    }

    /** Buffers little-endian longs and checksums them as they pass. */
    private static final class PayloadWriter {
        private final OutputStream out;
        private final ByteBuffer buf = ByteBuffer.allocate(CHUNK).order(ByteOrder.LITTLE_ENDIAN);
        private final CRC32C crc = new CRC32C();

        PayloadWriter(OutputStream out) {
            this.out = out;
        }

        void putLong(long v) throws IOException {
            if (buf.remaining() < 8) {
                flush();
            }
            buf.putLong(v);
        }

        private void flush() throws IOException {
            crc.update(buf.array(), 0, buf.position());
            out.write(buf.array(), 0, buf.position());
            buf.clear();
        }

        void finish() throws IOException {
            flush();
            buf.putInt((int) crc.getValue());
            out.write(buf.array(), 0, 4);
            buf.clear();
        }
    }

    /** Writes a filter to {@code file} atomically (see {@link AtomicFile#write}). */
    public static void write(Filter filter, Path file) throws IOException {
        AtomicFile.write(file, filter::writeTo);
    }

    // ---- reading --------------------------------------------------------------------------

    /** Reads a filter from a file; the message of any error names the file. */
    public static Filter read(Path file) throws IOException {
        try (InputStream in = new java.io.BufferedInputStream(Files.newInputStream(file), CHUNK)) {
            return read(in);
        } catch (FilterFormatException e) {
            throw new FilterFormatException(file + ": " + e.getMessage());
        }
    }

    /** Reads one filter from a byte array that holds exactly one serialized filter. */
    public static Filter read(byte[] bytes) throws IOException {
        java.io.ByteArrayInputStream in = new java.io.ByteArrayInputStream(bytes);
        Filter f = read(in);
        if (in.available() != 0) {
            throw new FilterFormatException(in.available() + " unexpected bytes after the filter's checksum");
        }
        return f;
    }

    /** Reads one filter from the stream, consuming exactly its bytes. */
    public static Filter read(InputStream in) throws IOException {
        byte[] hb = in.readNBytes(HEADER_BYTES);
        if (hb.length < 8) {
            throw new FilterFormatException(
                    "truncated: " + hb.length + " bytes, shorter than a filter header (" + HEADER_BYTES + " bytes)");
        }
        ByteBuffer h = ByteBuffer.wrap(hb).order(ByteOrder.LITTLE_ENDIAN);
        if (h.getInt(0) != MAGIC) {
            throw new FilterFormatException("not a Needle filter: the first bytes are not \"NDLF\"");
        }
        int version = h.getShort(4) & 0xFFFF;
        if (version != VERSION) {
            throw new FilterFormatException(
                    "unsupported filter format version " + version + "; this build reads version " + VERSION
                            + " (rebuild the filter, or use a Needle release that reads version " + version + ")");
        }
        if (hb.length < HEADER_BYTES) {
            throw new FilterFormatException("truncated: header has " + hb.length + " of " + HEADER_BYTES + " bytes");
        }
        CRC32C crc = new CRC32C();
        crc.update(hb, 0, HEADER_CRC_OFFSET);
        if ((int) crc.getValue() != h.getInt(HEADER_CRC_OFFSET)) {
            throw new FilterFormatException("corrupt header: checksum mismatch");
        }
        if (h.getInt(56) != 0) {
            throw new FilterFormatException("corrupt header: reserved bytes 56-59 are not zero");
        }
        FilterKind kind = FilterKind.ofCode(h.get(6) & 0xFF);
        if (kind == null) {
            throw new FilterFormatException("unknown filter kind " + (h.get(6) & 0xFF));
        }
        if ((h.get(7) & 0xFF) != HASH_XXH64) {
            throw new FilterFormatException("unknown hash function code " + (h.get(7) & 0xFF) + " (1 = XXH64 seed 0)");
        }
        return kind == FilterKind.BLOOM ? readBloom(h, in) : readCuckoo(kind, h, in);
    }

    private static Filter readCuckoo(FilterKind kind, ByteBuffer h, InputStream in) throws IOException {
        int f = h.get(8) & 0xFF;
        int b = h.get(9) & 0xFF;
        int tagBits = h.get(10) & 0xFF;
        int stashCapacity = h.get(11) & 0xFF;
        int stashSize = h.getInt(12);
        long buckets = h.getLong(16);
        long entries = h.getLong(24);
        long third = h.getLong(32);
        int expectedTag = kind == FilterKind.CUCKOO ? 0 : kind == FilterKind.DELETION_AWARE_CUCKOO ? 1 : 2;
        if (tagBits != expectedTag) {
            throw new FilterFormatException(
                    "corrupt header: " + kind + " has " + expectedTag + " tag bits, header says " + tagBits);
        }
        if (buckets < 1 || buckets > Integer.MAX_VALUE || stashSize < 0 || stashSize > stashCapacity) {
            throw new FilterFormatException(
                    "corrupt header: buckets " + buckets + ", stash " + stashSize + "/" + stashCapacity);
        }
        CuckooTable t;
        try {
            t = new CuckooTable(f, tagBits, b, (int) buckets, stashCapacity, kind == FilterKind.ADAPTIVE_CUCKOO);
        } catch (IllegalArgumentException e) {
            throw new FilterFormatException("corrupt header: " + e.getMessage());
        }
        long payload = cuckooPayloadBytes(t.dataWords(), stashSize, t.backing != null, t.slots());
        if (h.getLong(48) != payload) {
            throw new FilterFormatException("corrupt header: payload length " + h.getLong(48) + " does not match the "
                    + payload + " bytes its parameters imply");
        }
        PayloadReader r = new PayloadReader(in, payload);
        for (int i = 0; i < t.dataWords(); i++) {
            t.words[i] = r.getLong();
        }
        for (int i = 0; i < stashSize; i++) {
            long bucket = r.getLong();
            long lane = r.getLong();
            if (bucket < 0
                    || bucket >= buckets
                    || lane == 0
                    || (lane & ~t.laneMask) != 0
                    || (lane & t.fingerprintMask) == 0) {
                throw new FilterFormatException("corrupt stash entry " + i);
            }
            t.stashBucket[i] = (int) bucket;
            t.stashLane[i] = lane;
        }
        if (t.backing != null) {
            for (int i = 0; i < t.backing.length; i++) {
                t.backing[i] = r.getLong();
            }
            for (int i = 0; i < stashSize; i++) {
                t.stashBacking[i] = r.getLong();
            }
        }
        r.finish();
        t.stashSize = stashSize;
        t.rng = h.getLong(40);
        // Recount: the header's counts must agree with the table, else something wrote garbage.
        long occupied = stashSize;
        long deleted = 0;
        long deletedBit = 1L << f;
        for (int i = 0; i < t.slots(); i++) {
            long lane = t.lane(i);
            if (lane != 0) {
                if ((lane & t.fingerprintMask) == 0) {
                    throw new FilterFormatException("corrupt table: slot " + i + " holds a zero fingerprint");
                }
                occupied++;
                if (kind == FilterKind.DELETION_AWARE_CUCKOO && (lane & deletedBit) != 0) {
                    deleted++;
                }
            }
        }
        if (kind == FilterKind.DELETION_AWARE_CUCKOO) {
            for (int i = 0; i < stashSize; i++) {
                if ((t.stashLane[i] & deletedBit) != 0) {
                    deleted++;
                }
            }
        }
        if (occupied != entries || (kind == FilterKind.DELETION_AWARE_CUCKOO && deleted != third)) {
            throw new FilterFormatException(
                    "corrupt filter: header says " + entries + " entries, table holds " + occupied);
        }
        t.occupied = occupied;
        switch (kind) {
            case CUCKOO:
                return new CuckooFilter(t);
            case DELETION_AWARE_CUCKOO:
                return new DeletionAwareCuckooFilter(t, deleted);
            default:
                return new AdaptiveCuckooFilter(t, third);
        }
    }

    private static Filter readBloom(ByteBuffer h, InputStream in) throws IOException {
        int k = h.getInt(12);
        long bits = h.getLong(16);
        long count = h.getLong(24);
        long designKeys = h.getLong(32);
        if (bits < 64 || bits > BloomFilter.MAX_BITS || k < 1 || k > 32 || count < 0 || designKeys < 1) {
            throw new FilterFormatException("corrupt header: Bloom filter of " + bits + " bits, " + k + " hashes");
        }
        long payload = ((bits + 63) >>> 6) * 8;
        if (h.getLong(48) != payload) {
            throw new FilterFormatException("corrupt header: payload length " + h.getLong(48) + " does not match the "
                    + payload + " bytes its parameters imply");
        }
        BloomFilter bf = new BloomFilter(bits, k, designKeys, count);
        PayloadReader r = new PayloadReader(in, payload);
        for (int i = 0; i < bf.words.length; i++) {
            bf.words[i] = r.getLong();
        }
        r.finish();
        return bf;
    }

    /** Reads exactly {@code length} payload bytes in chunks, then checks the trailing CRC32C. */
    private static final class PayloadReader {
        private final InputStream in;
        private final long length;
        private long consumed;
        private final ByteBuffer buf = ByteBuffer.allocate(CHUNK).order(ByteOrder.LITTLE_ENDIAN);
        private final CRC32C crc = new CRC32C();

        PayloadReader(InputStream in, long length) {
            this.in = in;
            this.length = length;
            buf.limit(0);
        }

        long getLong() throws IOException {
            if (buf.remaining() < 8) {
                fill();
            }
            return buf.getLong();
        }

        private void fill() throws IOException {
            int want = (int) Math.min(CHUNK, length - consumed);
            int n = in.readNBytes(buf.array(), 0, want);
            if (n < want) {
                throw new FilterFormatException(
                        "truncated: payload has " + (consumed + n) + " of " + length + " bytes");
            }
            crc.update(buf.array(), 0, n);
            consumed += n;
            buf.position(0).limit(n);
        }

        void finish() throws IOException {
            byte[] c = in.readNBytes(4);
            if (c.length < 4) {
                throw new FilterFormatException("truncated: the payload checksum is missing");
            }
            int stored = ByteBuffer.wrap(c).order(ByteOrder.LITTLE_ENDIAN).getInt();
            if (stored != (int) crc.getValue()) {
                throw new FilterFormatException("corrupt payload: checksum mismatch");
            }
        }
    }
}
