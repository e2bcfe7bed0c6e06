package dev.needle.cassandra.node;

import java.util.Arrays;

/**
 * A set of 64-bit key hashes without boxing: open addressing, linear probing, deletion by
 * backward shift (no tombstones, so lookups never slow down after many removals). Not thread
 * safe: its owner guards it.
 */
final class LongSet {
    private static final long EMPTY = 0;
    private long[] slots;
    private int size;
    /** 0 is the empty-slot marker, so the hash 0 is kept aside. */
    private boolean hasZero;

    LongSet(int expected) {
        int cap = Integer.highestOneBit(Math.max(16, expected * 2 - 1)) << 1;
        slots = new long[cap];
    }

    int size() {
        return size + (hasZero ? 1 : 0);
    }

    boolean contains(long h) {
        if (h == EMPTY) {
            return hasZero;
        }
        int mask = slots.length - 1;
        for (int i = index(h, mask); ; i = (i + 1) & mask) {
            long s = slots[i];
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
        if ((size + 1) * 2 > slots.length) {
            grow();
        }
        int mask = slots.length - 1;
        for (int i = index(h, mask); ; i = (i + 1) & mask) {
            long s = slots[i];
            if (s == h) {
                return false;
            }
            if (s == EMPTY) {
                slots[i] = h;
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
        int mask = slots.length - 1;
        int i = index(h, mask);
        while (slots[i] != h) {
            if (slots[i] == EMPTY) {
                return false;
            }
            i = (i + 1) & mask;
        }
        // Backward-shift the entries of the run after i that may move into the hole.
        int hole = i;
        for (int j = (i + 1) & mask; slots[j] != EMPTY; j = (j + 1) & mask) {
            int home = index(slots[j], mask);
            // Move j into the hole unless its home lies cyclically in (hole, j].
            boolean stays = hole <= j ? (hole < home && home <= j) : (hole < home || home <= j);
            if (!stays) {
                slots[hole] = slots[j];
                hole = j;
            }
        }
        slots[hole] = EMPTY;
        size--;
        return true;
    }

    /** The elements, in no particular order. */
    long[] toArray() {
        long[] out = new long[size()];
        int n = 0;
        for (long s : slots) {
            if (s != EMPTY) {
                out[n++] = s;
            }
        }
        if (hasZero) {
            out[n] = 0;
        }
        return out;
    }

    void clear() {
        Arrays.fill(slots, EMPTY);
        size = 0;
        hasZero = false;
    }

    private void grow() {
        long[] old = slots;
        slots = new long[old.length * 2];
        size = 0;
        for (long s : old) {
            if (s != EMPTY) {
                add(s);
            }
        }
    }

    private static int index(long h, int mask) {
        // The hashes are XXH64 outputs already; fold the high bits in anyway.
        return (int) (h ^ (h >>> 32)) & mask;
    }
}
