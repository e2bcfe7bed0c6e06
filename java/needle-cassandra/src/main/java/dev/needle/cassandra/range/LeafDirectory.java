package dev.needle.cassandra.range;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.List;
import java.util.Objects;
import java.util.function.ToDoubleFunction;

/**
 * The inner level of the ordered range index (docs/range-queries.md): its leaves in value order,
 * each with the lowest value it holds and its number of entries. Immutable; a change makes a new
 * directory with the next version.
 *
 * <p>Because leaves split when they fill up, every leaf holds about the same number of entries
 * whatever the values' distribution: the directory is an equi-depth histogram of the indexed
 * column, and {@link #estimateRows} is off by at most the entries of the (at most two) leaves that
 * a range covers in part, uniform or skewed values alike.
 *
 * @param <V> the indexed column's values, in {@code order}
 */
public final class LeafDirectory<V> {
    /**
     * One leaf: the values from {@code lowerBound} (inclusive; null for the first leaf, which starts
     * below every value) up to the next leaf's lower bound (exclusive). A leaf split off another
     * and not yet settled names that leaf in {@code dualOf} (else -1): its entries are written to
     * both and read from both, so that nodes that do not know of the split yet still find them.
     */
    public record Leaf<V>(long id, V lowerBound, long rows, long dualOf) {
        public Leaf {
            if (rows < 0) {
                throw new IllegalArgumentException("negative row count " + rows);
            }
        }

        /** A settled leaf. */
        public Leaf(long id, V lowerBound, long rows) {
            this(id, lowerBound, rows, -1);
        }

        public boolean dual() {
            return dualOf >= 0;
        }
    }

    private final List<Leaf<V>> leaves;
    private final Comparator<V> order;
    private final long version;

    private LeafDirectory(List<Leaf<V>> leaves, Comparator<V> order, long version) {
        this.leaves = List.copyOf(leaves);
        this.order = order;
        this.version = version;
    }

    /** A new index: one empty leaf (id 0) for every value. */
    public static <V> LeafDirectory<V> empty(Comparator<V> order) {
        return new LeafDirectory<>(List.of(new Leaf<>(0, null, 0)), order, 0);
    }

    /**
     * A directory of the given leaves, the first with a null lower bound and the others in strictly
     * increasing order of their lower bounds.
     */
    public static <V> LeafDirectory<V> of(List<Leaf<V>> leaves, Comparator<V> order, long version) {
        if (leaves.isEmpty() || leaves.get(0).lowerBound() != null) {
            throw new IllegalArgumentException("the first leaf must start below every value (null lower bound)");
        }
        for (int i = 1; i < leaves.size(); i++) {
            // Checked before any comparison, so that a second null bound is named, not a comparator's NPE.
            Objects.requireNonNull(leaves.get(i).lowerBound(), "only the first leaf has no lower bound");
            if (i >= 2
                    && order.compare(
                                    leaves.get(i - 1).lowerBound(),
                                    leaves.get(i).lowerBound())
                            >= 0) {
                throw new IllegalArgumentException("lower bounds not strictly increasing at leaf " + i);
            }
        }
        return new LeafDirectory<>(leaves, order, version);
    }

    public long version() {
        return version;
    }

    public List<Leaf<V>> leaves() {
        return leaves;
    }

    /** The entries of every leaf together. */
    public long totalRows() {
        long n = 0;
        for (Leaf<V> l : leaves) {
            n += l.rows();
        }
        return n;
    }

    /** The leaf that holds {@code value}. */
    public Leaf<V> leafFor(V value) {
        return leaves.get(indexFor(value));
    }

    /**
     * The upper bound (exclusive) of the values {@code leaf} holds: the next leaf's lower bound,
     * null for the last leaf (unbounded).
     */
    public V upperBound(Leaf<V> leaf) {
        int i = position(leaf.id());
        return i + 1 < leaves.size() ? leaves.get(i + 1).lowerBound() : null;
    }

    /** The leaves that hold values in [{@code from}, {@code to}), in value order. */
    public List<Leaf<V>> leavesFor(V from, V to) {
        int[] span = span(from, to);
        return span == null ? List.of() : leaves.subList(span[0], span[1] + 1);
    }

    /** Indexes of the first and last leaf that hold values in [from, to); null for an empty range. */
    private int[] span(V from, V to) {
        if (order.compare(from, to) >= 0) {
            return null;
        }
        int first = indexFor(from);
        int last = indexFor(to);
        // A leaf starting exactly at 'to' holds nothing below it.
        if (last > first && order.compare(leaves.get(last).lowerBound(), to) == 0) {
            last--;
        }
        return new int[] {first, last};
    }

    /**
     * The expected number of entries with values in [{@code from}, {@code to}): the leaves the range
     * covers whole count whole; a leaf it covers in part counts by the share of the leaf's span that
     * the range covers, where {@code position} places values on a line (a number for numeric
     * columns), and by half where the leaf has no span (the first and the last leaf's open ends are
     * bounded by {@code min} and {@code max}, the lowest and highest values indexed).
     */
    public double estimateRows(V from, V to, ToDoubleFunction<V> position, V min, V max) {
        int[] covered = span(from, to);
        if (covered == null) {
            return 0;
        }
        double rows = 0;
        for (int at = covered[0]; at <= covered[1]; at++) {
            Leaf<V> l = leaves.get(at);
            boolean last = at + 1 == leaves.size();
            V lo = l.lowerBound() == null ? min : l.lowerBound();
            V hi = last ? max : leaves.get(at + 1).lowerBound();
            if (!last && order.compare(from, lo) <= 0 && order.compare(to, hi) >= 0) {
                rows += l.rows(); // covered whole
                continue;
            }
            double span = position.applyAsDouble(hi) - position.applyAsDouble(lo);
            if (!(span > 0)) {
                rows += l.rows() / 2.0;
                continue;
            }
            double a = Math.max(position.applyAsDouble(from), position.applyAsDouble(lo));
            double b = Math.min(position.applyAsDouble(to), position.applyAsDouble(hi));
            rows += l.rows() * Math.max(0, Math.min(1, (b - a) / span));
        }
        return rows;
    }

    /** This directory with leaf {@code id}'s count set to {@code rows} (same version: counts are hints). */
    public LeafDirectory<V> withRows(long id, long rows) {
        List<Leaf<V>> next = new ArrayList<>(leaves);
        int i = position(id);
        next.set(
                i,
                new Leaf<>(id, leaves.get(i).lowerBound(), rows, leaves.get(i).dualOf()));
        return new LeafDirectory<>(next, order, version);
    }

    /**
     * The next version, with leaf {@code id} replaced by two: {@code left} (same lower bound, its
     * {@code leftRows} entries) and {@code right} starting at {@code at}, which must lie strictly
     * inside the leaf.
     */
    public LeafDirectory<V> split(long id, V at, long leftId, long leftRows, long rightId, long rightRows) {
        int i = position(id);
        Leaf<V> old = leaves.get(i);
        if (old.lowerBound() != null && order.compare(at, old.lowerBound()) <= 0) {
            throw new IllegalArgumentException("split point not above leaf " + id + "'s lower bound");
        }
        if (i + 1 < leaves.size() && order.compare(at, leaves.get(i + 1).lowerBound()) >= 0) {
            throw new IllegalArgumentException("split point not below the next leaf's lower bound");
        }
        List<Leaf<V>> next = new ArrayList<>(leaves);
        next.set(i, new Leaf<>(leftId, old.lowerBound(), leftRows));
        next.add(i + 1, new Leaf<>(rightId, at, rightRows));
        return new LeafDirectory<>(next, order, version + 1);
    }

    private int position(long id) {
        for (int i = 0; i < leaves.size(); i++) {
            if (leaves.get(i).id() == id) {
                return i;
            }
        }
        throw new IllegalArgumentException("no leaf " + id + " in directory version " + version);
    }

    /** Index of the last leaf whose lower bound is at most {@code value}. */
    private int indexFor(V value) {
        List<V> bounds = new LowerBounds();
        int i = Collections.binarySearch(bounds, value, order);
        return i >= 0 ? i + 1 : -i - 1;
    }

    /** The lower bounds of leaves 1..n-1 (leaf 0 has none), as a list for binary search. */
    private final class LowerBounds extends java.util.AbstractList<V> implements java.util.RandomAccess {
        @Override
        public V get(int i) {
            return leaves.get(i + 1).lowerBound();
        }

        @Override
        public int size() {
            return leaves.size() - 1;
        }
    }
}
