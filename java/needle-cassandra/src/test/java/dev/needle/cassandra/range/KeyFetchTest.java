package dev.needle.cassandra.range;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/** Key lists survive their encoding, and are cut into lists that each fit one expression. */
class KeyFetchTest {
    private static ByteBuffer bytes(Random r, int n) {
        byte[] b = new byte[n];
        r.nextBytes(b);
        return ByteBuffer.wrap(b);
    }

    @Test
    void keysSurviveTheirEncoding() {
        Random r = new Random(7);
        for (int round = 0; round < 50; round++) {
            List<KeyFetch.Key> keys = new ArrayList<>();
            int n = r.nextInt(300);
            for (int i = 0; i < n; i++) {
                // an empty clustering is a table without clustering columns
                keys.add(
                        new KeyFetch.Key(bytes(r, 1 + r.nextInt(40)), bytes(r, r.nextInt(3) == 0 ? 0 : r.nextInt(30))));
            }
            assertEquals(keys, KeyFetch.decode(KeyFetch.encode(keys)));
        }
    }

    @Test
    void aValueOfAnotherKindIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> KeyFetch.decode(ByteBuffer.wrap(new byte[] {1, 2, 3})));
        assertThrows(IllegalArgumentException.class, () -> KeyFetch.decode(ByteBuffer.allocate(0)));
    }

    @Test
    void listsFitAnExpressionAndKeepEveryKeyOnce() {
        Random r = new Random(11);
        List<KeyFetch.Key> keys = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            int pk = i % 97 == 0 ? 40_000 : 1 + r.nextInt(100);
            int ck = i % 501 == 0 ? 30_000 : r.nextInt(100);
            keys.add(new KeyFetch.Key(bytes(r, pk), bytes(r, ck)));
        }
        KeyFetch.Lists lists = KeyFetch.lists(keys);
        List<KeyFetch.Key> again = new ArrayList<>(lists.alone());
        for (List<KeyFetch.Key> list : lists.expressions()) {
            assertTrue(KeyFetch.encode(list).remaining() <= KeyFetch.MAX_EXPRESSION_BYTES);
            again.addAll(list);
        }
        assertTrue(lists.expressions().size() > 1);
        assertEquals(keys.size(), again.size());
        assertTrue(again.containsAll(keys));
        for (KeyFetch.Key k : lists.alone()) {
            assertTrue(k.encodedSize() + 4 > KeyFetch.MAX_EXPRESSION_BYTES);
        }
    }
}
