package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/**
 * The owner's exact set of published hashes (in native memory), against java.util.HashSet,
 * through growth, removals, clears and freeing.
 */
class LongSetTest {
    @Test
    void behavesAsAHashSet() {
        Random rnd = new Random(11);
        LongSet set = new LongSet(4);
        Set<Long> model = new HashSet<>();
        long[] pool = rnd.longs(3000).toArray();
        pool[0] = 0; // the zero hash is a key like any other
        pool[1] = Long.MIN_VALUE;
        for (int i = 0; i < 200_000; i++) {
            long h = pool[rnd.nextInt(pool.length)];
            switch (rnd.nextInt(3)) {
                case 0 -> assertEquals(model.add(h), set.add(h), "add " + h);
                case 1 -> assertEquals(model.remove(h), set.remove(h), "remove " + h);
                default -> assertEquals(model.contains(h), set.contains(h), "contains " + h);
            }
            assertEquals(model.size(), set.size());
            if (i % 50_000 == 49_999) {
                long[] all = set.toArray();
                assertEquals(model, new HashSet<>(Arrays.stream(all).boxed().toList()));
                assertEquals(model.size(), all.length);
            }
            if (i == 150_000) {
                set.clear();
                model.clear();
            }
        }
    }

    /** Clearing gives back the memory of growth. */
    @Test
    void clearGivesBackTheMemoryOfGrowth() {
        LongSet set = new LongSet(4);
        long small = set.bytes();
        for (long h = 1; h <= 100_000; h++) {
            assertTrue(set.add(h * 0x9E3779B97F4A7C15L));
        }
        assertEquals(100_000, set.size());
        assertTrue(
                set.bytes() >= 100_000 * 16L && set.bytes() <= 100_000 * 32L, "16 to 32 bytes a hash: " + set.bytes());
        set.clear();
        assertEquals(0, set.size());
        assertEquals(small, set.bytes());
        assertFalse(set.contains(0x9E3779B97F4A7C15L));
        assertTrue(set.add(0) && set.add(7) && set.contains(0) && set.contains(7));
    }
}
