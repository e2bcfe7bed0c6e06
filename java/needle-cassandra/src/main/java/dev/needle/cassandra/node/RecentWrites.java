package dev.needle.cassandra.node;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * The keys this coordinator wrote lately, so that a read through it always sees its own writes
 * (invariant 5c) whatever its copies say. A time-stamped filter without locks or allocation: each
 * key marks two slots with the time of its write; a key was written within a window if both its
 * slots were marked within it. A collision can only make a key look recent (and be read).
 */
final class RecentWrites {
    private final AtomicLongArray slots;
    private final int mask;

    RecentWrites(int slotsPowerOfTwo) {
        slots = new AtomicLongArray(1 << slotsPowerOfTwo);
        mask = (1 << slotsPowerOfTwo) - 1;
    }

    private static long mix(long hash, long table) {
        long h = hash ^ (table * 0x9E3779B97F4A7C15L);
        h ^= h >>> 33;
        h *= 0xFF51AFD7ED558CCDL;
        h ^= h >>> 33;
        return h;
    }

    /** Marks a write of the key with hash {@code hash} in table {@code table} at {@code nowMillis}. */
    void record(long table, long hash, long nowMillis) {
        long h = mix(hash, table);
        mark((int) h & mask, nowMillis);
        mark((int) (h >>> 32) & mask, nowMillis);
    }

    private void mark(int slot, long nowMillis) {
        long prev;
        do {
            prev = slots.get(slot);
            if (prev >= nowMillis) {
                return;
            }
        } while (!slots.compareAndSet(slot, prev, nowMillis));
    }

    /** Whether the key may have been written at or after {@code sinceMillis}. */
    boolean writtenSince(long table, long hash, long sinceMillis) {
        long h = mix(hash, table);
        return slots.get((int) h & mask) >= sinceMillis && slots.get((int) (h >>> 32) & mask) >= sinceMillis;
    }
}
