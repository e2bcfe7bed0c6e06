package dev.needle.range;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import java.util.TreeSet;
import net.jqwik.api.ForAll;
import net.jqwik.api.Property;
import net.jqwik.api.constraints.IntRange;
import net.jqwik.api.constraints.Size;
import org.junit.jupiter.api.Test;

class TokenSplitTest {
    /**
     * A ring of random tokens, its ranges as Cassandra states them ((previous token, token], the
     * first wrapping around), each cut into pieces: the splits must cover (MIN, MAX] exactly once.
     */
    @Property(tries = 300)
    void splitsOfARingCoverItExactlyOnce(
            @ForAll @Size(min = 1, max = 40) List<Long> tokens, @ForAll @IntRange(min = 1, max = 9) int pieces) {
        TreeSet<Long> ring = new TreeSet<>(tokens);
        ring.remove(Long.MIN_VALUE); // never a Murmur3 token
        if (ring.isEmpty()) {
            return;
        }
        List<TokenSplit> splits = new ArrayList<>();
        Long previous = ring.last();
        for (long t : ring) {
            splits.addAll(TokenSplit.of(previous, t, pieces));
            previous = t;
        }
        splits.sort(Comparator.comparingLong(TokenSplit::after));
        assertEquals(Long.MIN_VALUE, splits.get(0).after(), "the first split starts at the ring's start");
        for (int i = 1; i < splits.size(); i++) {
            assertEquals(splits.get(i - 1).upTo(), splits.get(i).after(), "gap or overlap at split " + i);
        }
        assertEquals(Long.MAX_VALUE, splits.get(splits.size() - 1).upTo(), "the last split ends at the ring's end");
        assertTrue(splits.size() <= (ring.size() + 1) * pieces, "the wrapping range is cut in two parts");
    }

    @Test
    void aSingleTokenRingIsTheWholeRing() {
        List<TokenSplit> s = TokenSplit.of(42, 42, 1);
        assertEquals(List.of(new TokenSplit(42, Long.MAX_VALUE), new TokenSplit(Long.MIN_VALUE, 42)), s);
    }

    @Test
    void piecesAreOfEqualWidth() {
        assertEquals(
                List.of(new TokenSplit(0, 25), new TokenSplit(25, 50), new TokenSplit(50, 75), new TokenSplit(75, 100)),
                TokenSplit.of(0, 100, 4));
        assertEquals(List.of(new TokenSplit(0, 1), new TokenSplit(1, 2)), TokenSplit.of(0, 2, 5), "no empty split");
    }

    @Test
    void containsFollowsTheBounds() {
        TokenSplit s = new TokenSplit(10, 20);
        assertTrue(!s.contains(10) && s.contains(11) && s.contains(20) && !s.contains(21));
        assertThrows(IllegalArgumentException.class, () -> new TokenSplit(5, 5));
        assertThrows(IllegalArgumentException.class, () -> TokenSplit.of(0, 1, 0));
    }
}
