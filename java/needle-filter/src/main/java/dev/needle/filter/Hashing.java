package dev.needle.filter;

import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;

/**
 * The one hash of Needle's filters: XXH64 with seed 0 over the key's bytes
 * (as specified in {@code format/filter-v1.md}). Filters store nothing but
 * values derived from this 64-bit hash, so a key given as bytes and the same
 * key given as its precomputed hash answer identically.
 */
public final class Hashing {
    private static final long P1 = 0x9E3779B185EBCA87L;
    private static final long P2 = 0xC2B2AE3D27D4EB4FL;
    private static final long P3 = 0x165667B19E3779F9L;
    private static final long P4 = 0x85EBCA77C2B2AE63L;
    private static final long P5 = 0x27D4EB2F165667C5L;

    private Hashing() {}

    /** XXH64(key, seed 0). */
    public static long hash(byte[] key) {
        return xxh64(key, 0, key.length, 0L);
    }

    /** XXH64(key, seed 0) of the buffer's remaining bytes; the buffer's position is not changed. */
    public static long hash(ByteBuffer key) {
        if (key.hasArray()) {
            return xxh64(key.array(), key.arrayOffset() + key.position(), key.remaining(), 0L);
        }
        byte[] copy = new byte[key.remaining()];
        key.duplicate().get(copy);
        return hash(copy);
    }

    /** XXH64 of the UTF-8 bytes of {@code key}, seed 0. */
    public static long hash(String key) {
        return hash(key.getBytes(StandardCharsets.UTF_8));
    }

    /** XXH64 of {@code len} bytes of {@code buf} from {@code off}, with the given seed. */
    public static long xxh64(byte[] buf, int off, int len, long seed) {
        if (off < 0 || len < 0 || off + len > buf.length) {
            throw new IndexOutOfBoundsException(
                    "range [" + off + ", " + (off + len) + ") outside array of " + buf.length);
        }
        final int end = off + len;
        int p = off;
        long h;
        if (len >= 32) {
            long v1 = seed + P1 + P2, v2 = seed + P2, v3 = seed, v4 = seed - P1;
            final int limit = end - 32;
            do {
                v1 = round(v1, le64(buf, p));
                v2 = round(v2, le64(buf, p + 8));
                v3 = round(v3, le64(buf, p + 16));
                v4 = round(v4, le64(buf, p + 24));
                p += 32;
            } while (p <= limit);
            h = Long.rotateLeft(v1, 1) + Long.rotateLeft(v2, 7) + Long.rotateLeft(v3, 12) + Long.rotateLeft(v4, 18);
            h = mergeRound(h, v1);
            h = mergeRound(h, v2);
            h = mergeRound(h, v3);
            h = mergeRound(h, v4);
        } else {
            h = seed + P5;
        }
        h += len;
        while (p + 8 <= end) {
            h ^= round(0, le64(buf, p));
            h = Long.rotateLeft(h, 27) * P1 + P4;
            p += 8;
        }
        if (p + 4 <= end) {
            h ^= (le32(buf, p) & 0xFFFFFFFFL) * P1;
            h = Long.rotateLeft(h, 23) * P2 + P3;
            p += 4;
        }
        while (p < end) {
            h ^= (buf[p] & 0xFFL) * P5;
            h = Long.rotateLeft(h, 11) * P1;
            p++;
        }
        h ^= h >>> 33;
        h *= P2;
        h ^= h >>> 29;
        h *= P3;
        h ^= h >>> 32;
        return h;
    }

    /**
     * A strong 64-bit bijective mixer (the MurmurHash3 fmix64 finalizer). Used
     * to derive independent values from one key hash; never as the key hash.
     */
    public static long mix64(long x) {
        x ^= x >>> 33;
        x *= 0xFF51AFD7ED558CCDL;
        x ^= x >>> 33;
        x *= 0xC4CEB9FE1A85EC53L;
        x ^= x >>> 33;
        return x;
    }

    /** Maps a 32-bit value uniformly onto [0, n) without division (Lemire's multiply-shift). */
    static int reduce(int hash32, int n) {
        return (int) (((hash32 & 0xFFFFFFFFL) * n) >>> 32);
    }

    private static long round(long acc, long input) {
        acc += input * P2;
        acc = Long.rotateLeft(acc, 31);
        return acc * P1;
    }

    private static long mergeRound(long acc, long val) {
        acc ^= round(0, val);
        return acc * P1 + P4;
    }

    private static long le64(byte[] b, int i) {
        return (b[i] & 0xFFL)
                | (b[i + 1] & 0xFFL) << 8
                | (b[i + 2] & 0xFFL) << 16
                | (b[i + 3] & 0xFFL) << 24
                | (b[i + 4] & 0xFFL) << 32
                | (b[i + 5] & 0xFFL) << 40
                | (b[i + 6] & 0xFFL) << 48
                | (b[i + 7] & 0xFFL) << 56;
    }

    private static int le32(byte[] b, int i) {
        return (b[i] & 0xFF) | (b[i + 1] & 0xFF) << 8 | (b[i + 2] & 0xFF) << 16 | (b[i + 3] & 0xFF) << 24;
    }
}
