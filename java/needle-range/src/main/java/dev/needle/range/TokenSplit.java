package dev.needle.range;

import java.math.BigInteger;
import java.util.ArrayList;
import java.util.List;

/**
 * One piece of the Murmur3 token ring: the tokens {@code t} with {@code after < t <= upTo}. The
 * ring is {@code (Long.MIN_VALUE, Long.MAX_VALUE]}: Murmur3Partitioner never hands out
 * {@code Long.MIN_VALUE} (it maps that hash to {@code Long.MAX_VALUE}), so a split starting at
 * {@code Long.MIN_VALUE} starts at the beginning of the ring.
 *
 * @param after exclusive lower bound
 * @param upTo inclusive upper bound, greater than {@code after}
 */
public record TokenSplit(long after, long upTo) {
    public TokenSplit {
        if (upTo <= after) {
            throw new IllegalArgumentException("empty split (" + after + ", " + upTo + "]");
        }
    }

    /** The whole ring as one split. */
    public static final TokenSplit RING = new TokenSplit(Long.MIN_VALUE, Long.MAX_VALUE);

    /**
     * The splits of one token range of the ring, {@code (start, end]} as Cassandra states it: a
     * range whose end is not after its start wraps around the end of the ring (and one whose end
     * equals its start is the whole ring, the range of a single-token cluster). Each resulting
     * piece is cut into {@code pieces} splits of equal width (the last takes the remainder).
     */
    public static List<TokenSplit> of(long start, long end, int pieces) {
        if (pieces < 1) {
            throw new IllegalArgumentException("pieces must be at least 1, not " + pieces);
        }
        List<TokenSplit> out = new ArrayList<>();
        if (end > start) {
            cut(start, end, pieces, out);
        } else { // wraps: (start, MAX] and (MIN, end]
            if (start < Long.MAX_VALUE) {
                cut(start, Long.MAX_VALUE, pieces, out);
            }
            if (end > Long.MIN_VALUE) {
                cut(Long.MIN_VALUE, end, pieces, out);
            }
        }
        return out;
    }

    private static void cut(long after, long upTo, int pieces, List<TokenSplit> out) {
        BigInteger lo = BigInteger.valueOf(after);
        BigInteger width = BigInteger.valueOf(upTo).subtract(lo);
        int n = (int) Math.min(
                pieces, width.min(BigInteger.valueOf(Integer.MAX_VALUE)).longValue());
        long from = after;
        for (int i = 1; i <= n; i++) {
            long to = i == n
                    ? upTo
                    : lo.add(width.multiply(BigInteger.valueOf(i)).divide(BigInteger.valueOf(n)))
                            .longValueExact();
            if (to > from) {
                out.add(new TokenSplit(from, to));
                from = to;
            }
        }
    }

    /** Whether {@code token} falls in this split. */
    public boolean contains(long token) {
        return token > after && token <= upTo;
    }

    /** Whether the split starts at the beginning of the ring (its lower bound needs no restriction). */
    public boolean fromRingStart() {
        return after == Long.MIN_VALUE;
    }
}
