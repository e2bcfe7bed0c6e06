package dev.needle.cassandra.node;

import java.util.Arrays;

/** A growable list of longs, without boxing: the hashes of one receiver's snapshot as they are gathered. */
final class LongList {
    private long[] values = new long[16];
    private int size;

    void add(long v) {
        if (size == values.length) {
            values = Arrays.copyOf(values, size * 2);
        }
        values[size++] = v;
    }

    long[] toArray() {
        return Arrays.copyOf(values, size);
    }
}
