package dev.needle.cassandra.range;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.TreeSet;
import org.apache.cassandra.dht.Murmur3Partitioner;
import org.apache.cassandra.dht.Range;
import org.apache.cassandra.dht.Token;
import org.junit.jupiter.api.Test;

/** The splits of the parallel scan: every token of the ring in exactly one, in token order. */
class ParallelScanTest {
    private static Token token(long t) {
        return new Murmur3Partitioner.LongToken(t);
    }

    @Test
    void splitsCoverEveryTokenOnceInOrder() {
        SplittableRandom r = new SplittableRandom(11);
        for (int trial = 0; trial < 200; trial++) {
            TreeSet<Long> tokens = new TreeSet<>();
            int n = r.nextInt(50);
            for (int i = 0; i < n; i++) {
                tokens.add(r.nextLong());
            }
            if (trial % 10 == 0) {
                tokens.add(Long.MAX_VALUE); // a node at the ring's last token
            }
            List<Token> ring = new ArrayList<>();
            tokens.forEach(t -> ring.add(token(t)));
            int atLeast = 1 + r.nextInt(64);
            List<Range<Token>> splits = ParallelScan.splits(ring, atLeast);
            assertTrue(splits.size() >= atLeast, "at least " + atLeast + " splits, got " + splits.size());
            assertEquals(Long.MIN_VALUE, (long) splits.get(0).left.getTokenValue(), "the first split starts the ring");
            assertEquals(
                    Long.MAX_VALUE,
                    (long) splits.get(splits.size() - 1).right.getTokenValue(),
                    "the last split ends the ring");
            for (int i = 0; i < splits.size(); i++) {
                Range<Token> s = splits.get(i);
                assertTrue(
                        (long) s.left.getTokenValue() < (long) s.right.getTokenValue(), "a split is not empty: " + s);
                if (i > 0) {
                    assertEquals(splits.get(i - 1).right, s.left, "splits are contiguous");
                }
            }
            // Random tokens, the ring's own tokens and the extremes each fall in exactly one split.
            List<Long> probes = new ArrayList<>(tokens);
            probes.add(Long.MIN_VALUE + 1);
            probes.add(Long.MAX_VALUE);
            for (int i = 0; i < 100; i++) {
                long p = r.nextLong();
                probes.add(p == Long.MIN_VALUE ? 0 : p);
            }
            for (long p : probes) {
                long holders = splits.stream().filter(s -> s.contains(token(p))).count();
                assertEquals(1, holders, "token " + p + " in exactly one split");
            }
        }
    }
}
