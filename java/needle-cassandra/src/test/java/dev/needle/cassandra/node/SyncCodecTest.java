package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** The batch blob of format/node-filter-sync-v2.md: round trips, exact size, and refusals. */
class SyncCodecTest {
    @Test
    void roundTripsEveryLength() {
        Random rnd = new Random(7);
        for (int n = 0; n < 40; n++) {
            long[] hashes = rnd.longs(n).toArray();
            boolean[] removals = new boolean[n];
            for (int i = 0; i < n; i++) {
                removals[i] = rnd.nextBoolean();
            }
            ByteBuffer b = SyncCodec.encode(hashes, removals);
            assertEquals(5 + (n + 7) / 8 + 8 * n, b.remaining());
            SyncCodec.Changes c = SyncCodec.decode(b);
            assertArrayEquals(hashes, c.hashes());
            assertArrayEquals(removals, c.removals());
        }
    }

    /** The test vector of format/node-filter-sync-v2.md. */
    @Test
    void encodesTheFormatsTestVector() {
        ByteBuffer b = SyncCodec.encode(new long[] {1, -1}, new boolean[] {false, true});
        StringBuilder hex = new StringBuilder();
        while (b.hasRemaining()) {
            hex.append(String.format("%02x", b.get()));
        }
        assertEquals("01" + "02000000" + "02" + "0100000000000000" + "ffffffffffffffff", hex.toString());
    }

    @Test
    void refusesTruncatedAndForeignBlobs() {
        ByteBuffer b = SyncCodec.encode(new long[] {1, 2, 3}, new boolean[] {false, true, false});
        ByteBuffer cut = b.duplicate().limit(b.limit() - 1);
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> SyncCodec.decode(cut));
        assertTrue(e.getMessage().contains("3 changes"), e.getMessage());
        ByteBuffer other = ByteBuffer.allocate(b.remaining()).put(b.duplicate()).flip();
        other.put(0, (byte) 2);
        e = assertThrows(IllegalArgumentException.class, () -> SyncCodec.decode(other));
        assertTrue(e.getMessage().contains("version 2"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> SyncCodec.decode(ByteBuffer.allocate(3)));
    }
}
