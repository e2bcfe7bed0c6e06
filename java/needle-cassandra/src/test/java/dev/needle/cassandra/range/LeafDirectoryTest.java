package dev.needle.cassandra.range;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class LeafDirectoryTest {
    private static final Comparator<Double> ORDER = Comparator.naturalOrder();
    private static final int CAPACITY = 500;

    /**
     * Leaves of about CAPACITY values each, as splits would leave them, over uniform and over
     * Zipf-skewed values: the estimate of any range is off by at most the entries of the two leaves
     * it covers in part, and the leaves it names are exactly those that can hold its values.
     */
    @Test
    void estimatesAreWithinTwoLeavesForUniformAndSkewedValues() {
        for (String distribution : new String[] {"uniform", "zipf"}) {
            SplittableRandom r = new SplittableRandom(distribution.hashCode());
            double[] values = new double[50_000];
            for (int i = 0; i < values.length; i++) {
                // Zipf-like: most values crowd near 0 (a power of a uniform draw), as hot keys do.
                values[i] = distribution.equals("uniform") ? r.nextDouble() : Math.pow(r.nextDouble(), 8);
            }
            Arrays.sort(values);
            LeafDirectory<Double> d = equiDepth(values);
            assertEquals(values.length, d.totalRows());
            double worst = 0;
            for (int q = 0; q < 2_000; q++) {
                double from = values[r.nextInt(values.length)] - r.nextDouble() * 1e-3;
                double to = from + Math.pow(10, -1 - 4 * r.nextDouble()); // lengths 1e-5 to 1e-1
                long actual =
                        Arrays.stream(values).filter(v -> v >= from && v < to).count();
                double estimate = d.estimateRows(from, to, v -> v, values[0], values[values.length - 1]);
                List<LeafDirectory.Leaf<Double>> covered = d.leavesFor(from, to);
                long bound =
                        covered.get(0).rows() + covered.get(covered.size() - 1).rows();
                assertTrue(
                        Math.abs(estimate - actual) <= bound,
                        distribution + " [" + from + ", " + to + "): estimate " + estimate + ", actual " + actual);
                worst = Math.max(worst, Math.abs(estimate - actual));
                for (double v : values) {
                    if (v >= from && v < to) {
                        assertTrue(covered.contains(d.leafFor(v)), "leaf of " + v + " missing");
                    }
                }
            }
            assertTrue(worst <= 2 * CAPACITY + 2, distribution + ": worst error " + worst);
        }
    }

    @Test
    void leavesForFollowsTheBounds() {
        LeafDirectory<Double> d = LeafDirectory.of(
                List.of(new LeafDirectory.Leaf<>(1, null, 10), new LeafDirectory.Leaf<>(2, 0.5, 10)), ORDER, 3);
        assertEquals(List.of(1L), ids(d.leavesFor(0.1, 0.5)), "a range ending at a leaf's lower bound stops before it");
        assertEquals(List.of(1L, 2L), ids(d.leavesFor(0.1, 0.50001)));
        assertEquals(List.of(2L), ids(d.leavesFor(0.5, 0.9)));
        assertEquals(List.of(), d.leavesFor(0.7, 0.7), "an empty range");
        assertEquals(2, d.leafFor(0.5).id());
        assertEquals(1, d.leafFor(-1.0).id());
        assertEquals(0.5, d.upperBound(d.leafFor(0.1)), "a leaf ends where the next begins");
        assertEquals(null, d.upperBound(d.leafFor(0.7)), "the last leaf is unbounded");
    }

    @Test
    void aSplitMakesTheNextVersionAndKeepsTheOrder() {
        LeafDirectory<Double> d = LeafDirectory.<Double>empty(ORDER).withRows(0, 1_000);
        LeafDirectory<Double> s = d.split(0, 0.4, 1, 480, 2, 520);
        assertEquals(1, s.version());
        assertEquals(List.of(1L, 2L), ids(s.leaves()));
        assertEquals(1_000, s.totalRows());
        assertEquals(2, s.leafFor(0.4).id());
        assertThrows(IllegalArgumentException.class, () -> s.split(2, 0.3, 3, 1, 4, 1), "below the leaf's bound");
        assertThrows(IllegalArgumentException.class, () -> s.split(1, 0.4, 3, 1, 4, 1), "at the next leaf's bound");
        assertThrows(IllegalArgumentException.class, () -> s.split(9, 0.5, 3, 1, 4, 1), "no such leaf");
        assertThrows(
                IllegalArgumentException.class,
                () -> LeafDirectory.of(
                        List.of(
                                new LeafDirectory.Leaf<>(1, null, 0),
                                new LeafDirectory.Leaf<>(2, 0.5, 0),
                                new LeafDirectory.Leaf<>(3, 0.5, 0)),
                        ORDER,
                        0));
    }

    @Test
    void aSecondLeafWithoutLowerBoundIsNamed() {
        NullPointerException e = assertThrows(
                NullPointerException.class,
                () -> LeafDirectory.of(
                        List.of(
                                new LeafDirectory.Leaf<>(1, null, 0),
                                new LeafDirectory.Leaf<Double>(2, null, 0),
                                new LeafDirectory.Leaf<>(3, 0.5, 0)),
                        ORDER,
                        0));
        assertEquals("only the first leaf has no lower bound", e.getMessage());
    }

    /** Leaves of CAPACITY sorted values each (a leaf never starts inside a run of equal values). */
    private static LeafDirectory<Double> equiDepth(double[] sorted) {
        List<LeafDirectory.Leaf<Double>> leaves = new ArrayList<>();
        int start = 0;
        long id = 0;
        while (start < sorted.length) {
            int end = Math.min(sorted.length, start + CAPACITY);
            while (end < sorted.length && sorted[end] == sorted[end - 1]) {
                end++;
            }
            leaves.add(new LeafDirectory.Leaf<>(id++, start == 0 ? null : sorted[start], end - start));
            start = end;
        }
        return LeafDirectory.of(leaves, ORDER, 0);
    }

    private static List<Long> ids(List<LeafDirectory.Leaf<Double>> leaves) {
        return leaves.stream().map(LeafDirectory.Leaf::id).toList();
    }
}
