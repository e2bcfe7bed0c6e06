package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertEquals;

import java.util.Arrays;
import java.util.HashSet;
import java.util.Random;
import java.util.Set;
import org.junit.jupiter.api.Test;

/** The owner's exact set of published hashes, against java.util.HashSet, through growth, removals and clears. */
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
}
