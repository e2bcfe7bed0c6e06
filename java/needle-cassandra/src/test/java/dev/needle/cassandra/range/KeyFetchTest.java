package dev.needle.cassandra.range;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Range;
import org.apache.cassandra.dht.Token;
import org.junit.jupiter.api.Test;

/**
 * Key lists survive their encoding, are cut into lists that each fit one expression, and into
 * the spans of the ring that hold them.
 */
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
            List<KeyList.Key> keys = new ArrayList<>();
            int n = r.nextInt(300);
            for (int i = 0; i < n; i++) {
                // an empty clustering is a table without clustering columns
                keys.add(new KeyList.Key(bytes(r, 1 + r.nextInt(40)), bytes(r, r.nextInt(3) == 0 ? 0 : r.nextInt(30))));
            }
            assertEquals(keys, KeyList.decode(KeyList.encode(keys)));
        }
    }

    @Test
    void everyKeyGoesToTheSpanThatHoldsItsToken() {
        Random r = new Random(13);
        List<Token> ring = new ArrayList<>();
        for (int i = 0; i < 48; i++) {
            ring.add(new Murmur3Partitioner.LongToken(r.nextLong()));
        }
        ring.sort(null);
        List<Range<Token>> ranges = ParallelScan.splits(ring, 1);
        List<Range<Token>> spans = new ArrayList<>(); // the ranges in runs of 1 to 20
        Token left = ranges.get(0).left;
        for (int i = 0; i < ranges.size(); ) {
            i = Math.min(ranges.size(), i + 1 + r.nextInt(20));
            Token right = ranges.get(i - 1).right;
            spans.add(new Range<>(left, right));
            left = right;
        }
        List<KeyList.Key> keys = new ArrayList<>();
        for (int i = 0; i < 5_000; i++) {
            keys.add(new KeyList.Key(bytes(r, 1 + r.nextInt(16)), bytes(r, 0)));
        }
        List<List<KeyList.Key>> bySpan = KeyFetch.bySpan(Murmur3Partitioner.instance, spans, keys);
        assertEquals(spans.size(), bySpan.size());
        int n = 0;
        for (int i = 0; i < spans.size(); i++) {
            for (KeyList.Key k : bySpan.get(i)) {
                Token token = Murmur3Partitioner.instance.getToken(k.pk());
                assertTrue(spans.get(i).contains(token), "key of token " + token + " in span " + spans.get(i));
                n++;
            }
        }
        assertEquals(keys.size(), n, "every key in one span");
    }

    @Test
    void aValueOfAnotherKindIsRefused() {
        assertThrows(IllegalArgumentException.class, () -> KeyList.decode(ByteBuffer.wrap(new byte[] {1, 2, 3})));
        assertThrows(IllegalArgumentException.class, () -> KeyList.decode(ByteBuffer.allocate(0)));
    }

    @Test
    void listsFitAnExpressionAndKeepEveryKeyOnce() {
        Random r = new Random(11);
        List<KeyList.Key> keys = new ArrayList<>();
        for (int i = 0; i < 2_000; i++) {
            int pk = i % 97 == 0 ? 40_000 : 1 + r.nextInt(100);
            int ck = i % 501 == 0 ? 30_000 : r.nextInt(100);
            keys.add(new KeyList.Key(bytes(r, pk), bytes(r, ck)));
        }
        KeyList.Lists lists = KeyList.lists(keys);
        List<KeyList.Key> again = new ArrayList<>(lists.alone());
        for (List<KeyList.Key> list : lists.expressions()) {
            assertTrue(KeyList.encode(list).remaining() <= KeyList.MAX_EXPRESSION_BYTES);
            again.addAll(list);
        }
        assertTrue(lists.expressions().size() > 1);
        assertEquals(keys.size(), again.size());
        assertTrue(again.containsAll(keys));
        for (KeyList.Key k : lists.alone()) {
            assertTrue(k.encodedSize() + 4 > KeyList.MAX_EXPRESSION_BYTES);
        }
    }
}
