package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** A key written at or after a time is always reported as written since then; collisions only add. */
class RecentWritesTest {
    @Test
    void neverForgetsAWriteInsideTheWindow() {
        RecentWrites w = new RecentWrites(10); // small, so that collisions happen
        Random rnd = new Random(3);
        long[] hashes = rnd.longs(5000).toArray();
        for (int i = 0; i < hashes.length; i++) {
            w.record(7, hashes[i], 1_000 + i);
        }
        for (int i = 0; i < hashes.length; i++) {
            assertTrue(w.writtenSince(7, hashes[i], 1_000 + i), "write " + i + " forgotten");
        }
        RecentWrites empty = new RecentWrites(10);
        empty.record(7, 42, 5_000);
        assertFalse(empty.writtenSince(7, 43, 1), "a key never written, without collisions");
        assertFalse(empty.writtenSince(8, 42, 1), "the same hash in another table");
        assertFalse(empty.writtenSince(7, 42, 5_001), "written before the window");
    }
}
