package dev.needle.cassandra.node;

import java.lang.ref.Cleaner;
import org.apache.cassandra.io.util.Memory;

/**
 * A set of 64-bit key hashes in native memory, off the Java heap (as Cassandra keeps its Bloom
 * filters): open addressing, linear probing, deletion by backward shift (no tombstones, so lookups
 * never slow down after many removals); 16 to 32 bytes per hash (the table is a quarter to half
 * full). The memory is given back when the set is no longer reachable, so no caller can use it
 * after it is freed. Not thread safe: its owner guards it.
 */
final class LongSet {
    private static final long EMPTY = 0;
    private static final int MIN_SLOTS = 16;
    private static final Cleaner CLEANER = Cleaner.create();

    /** The native table, apart from the set so that the cleaner can free it without reaching the set. */
    private static final class Table implements Runnable {
        /** {@code slots} hashes of 8 bytes; volatile, so that the cleaner's thread frees the latest. */
        volatile Memory memory;

        @Override
        public void run() {
            memory.free();
        }
    }

    private final Table table = new Table();
    /** The table's size when the set was made, and again after a {@link #clear}. */
    private final long firstSlots;

    private long slots;
    private long size;
    /** 0 is the empty-slot marker, so the hash 0 is kept aside. */
    private boolean hasZero;

    LongSet(int expected) {
        firstSlots = Long.highestOneBit(Math.max(MIN_SLOTS, expected * 2L - 1)) << 1;
        table.memory = allocate(firstSlots);
        CLEANER.register(this, table);
    }

    /** A zeroed table of {@code n} slots, which becomes the set's size. */
    private Memory allocate(long n) {
        Memory m = Memory.allocate(n * 8);
        m.setMemory(0, n * 8, (byte) 0);
        slots = n;
        return m;
    }

    long size() {
        return size + (hasZero ? 1 : 0);
    }

    /** Native bytes held. */
    long bytes() {
        return slots * 8;
    }

    boolean contains(long h) {
        if (h == EMPTY) {
            return hasZero;
        }
        long mask = slots - 1;
        for (long i = index(h, mask); ; i = (i + 1) & mask) {
            long s = get(i);
            if (s == h) {
                return true;
            }
            if (s == EMPTY) {
                return false;
            }
        }
    }

    /** Adds {@code h}; false if it was there. */
    boolean add(long h) {
        if (h == EMPTY) {
            boolean added = !hasZero;
            hasZero = true;
            return added;
        }
        if ((size + 1) * 2 > slots) {
            grow();
        }
        long mask = slots - 1;
        for (long i = index(h, mask); ; i = (i + 1) & mask) {
            long s = get(i);
            if (s == h) {
                return false;
            }
            if (s == EMPTY) {
                set(i, h);
                size++;
                return true;
            }
        }
    }

    /** Removes {@code h}; false if it was not there. */
    boolean remove(long h) {
        if (h == EMPTY) {
            boolean removed = hasZero;
            hasZero = false;
            return removed;
        }
        long mask = slots - 1;
        long i = index(h, mask);
        while (get(i) != h) {
            if (get(i) == EMPTY) {
                return false;
            }
            i = (i + 1) & mask;
        }
        // Backward-shift the entries of the run after i that may move into the hole.
        long hole = i;
        for (long j = (i + 1) & mask; get(j) != EMPTY; j = (j + 1) & mask) {
            long home = index(get(j), mask);
            // Move j into the hole unless its home lies cyclically in (hole, j].
            boolean stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
            if (!stays) {
                set(hole, get(j));
                hole = j;
            }
        }
        set(hole, EMPTY);
        size--;
        return true;
    }

    /** The elements, in no particular order. */
    long[] toArray() {
        long[] out = new long[Math.toIntExact(size())];
        int n = 0;
        for (long i = 0; i < slots; i++) {
            long s = get(i);
            if (s != EMPTY) {
                out[n++] = s;
            }
        }
        if (hasZero) {
            out[n] = 0;
        }
        return out;
    }

    /** Empties the set and gives back the memory of its growth (it starts again at its first size). */
    void clear() {
        Memory old = table.memory;
        table.memory = allocate(firstSlots);
        old.free();
        size = 0;
        hasZero = false;
    }

    private void grow() {
        Memory old = table.memory;
        long oldSlots = slots;
        table.memory = allocate(oldSlots * 2);
        long mask = slots - 1;
        for (long i = 0; i < oldSlots; i++) {
            long h = old.getLong(i * 8);
            if (h != EMPTY) {
                long j = index(h, mask);
                while (get(j) != EMPTY) {
                    j = (j + 1) & mask;
                }
                set(j, h);
            }
        }
        old.free();
    }

    private long get(long i) {
        return table.memory.getLong(i * 8);
    }

    private void set(long i, long h) {
        table.memory.setLong(i * 8, h);
    }

    private static long index(long h, long mask) {
        // The hashes are XXH64 outputs already; fold the high bits in anyway.
        return (h ^ (h >>> 32)) & mask;
    }
}
