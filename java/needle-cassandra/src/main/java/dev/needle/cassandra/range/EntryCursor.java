package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.UntypedResultSet;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.utils.ByteBufferUtil;

/**
 * The index entries of a value range, in order (value, then primary key), leaf after leaf, read
 * from the index table in batches at the entry level. A leaf split off another and not yet
 * settled is read from both partitions, merged, without duplicates.
 */
final class EntryCursor {
    /**
     * A position in the index: an entry's value and its row's primary key; for an entry read from
     * the index, also the leaf it was read from and its write time (else -1 and {@link
     * #UNKNOWN_TIME}).
     */
    record Position(ByteBuffer value, ByteBuffer pk, ByteBuffer ck, long leaf, long written) {
        static final long UNKNOWN_TIME = Long.MIN_VALUE;

        /** A position alone (a paging state's), not an entry read. */
        Position(ByteBuffer value, ByteBuffer pk, ByteBuffer ck) {
            this(value, pk, ck, -1, UNKNOWN_TIME);
        }
    }

    /** A value bound; {@code value} null means unbounded. */
    record Bound(ByteBuffer value, boolean inclusive) {
        static final Bound NONE = new Bound(null, true);
    }

    private final RangeIndex index;
    private final ConsistencyLevel level;
    private final Bound lower;
    private final Bound upper;
    private final int batch;
    private final List<LeafDirectory.Leaf<ByteBuffer>> leaves;
    private final LeafDirectory<ByteBuffer> directory;
    private int leafAt = -1;
    private Position after;
    private Source[] sources = new Source[0];
    /** Index partitions read (the planner's measure of an index query's work). */
    int partitionReads;

    /** A cursor over the entries of [lower, upper) after {@code after} (if not null), by {@code directory}. */
    EntryCursor(
            RangeIndex index,
            LeafDirectory<ByteBuffer> directory,
            ConsistencyLevel level,
            Bound lower,
            Bound upper,
            Position after,
            int batch) {
        this.index = index;
        this.level = level;
        this.lower = lower;
        this.upper = upper;
        this.after = after;
        this.batch = batch;
        this.directory = directory;
        List<LeafDirectory.Leaf<ByteBuffer>> all = directory.leaves();
        ByteBuffer from = after != null ? after.value() : lower.value();
        int first = from == null ? 0 : all.indexOf(directory.leafFor(from));
        int last = upper.value() == null ? all.size() - 1 : all.indexOf(directory.leafFor(upper.value()));
        this.leaves = first <= last ? all.subList(first, last + 1) : List.of();
    }

    /** The next entry, or null when the range has no more. */
    Position next() {
        while (true) {
            Position best = null;
            for (Source s : sources) {
                Position p = s.peek();
                if (p != null && (best == null || compare(p, best) < 0)) {
                    best = p;
                }
            }
            if (best != null) {
                for (Source s : sources) {
                    Position p = s.peek();
                    if (p != null && compare(p, best) == 0) {
                        s.buffer.poll(); // the same entry in both partitions of a dual leaf
                    }
                }
                after = best;
                return best;
            }
            if (++leafAt >= leaves.size()) {
                return null;
            }
            LeafDirectory.Leaf<ByteBuffer> leaf = leaves.get(leafAt);
            Bound lo = tighterLower(lower, leaf.lowerBound());
            Bound hi = tighterUpper(upper, directory.upperBound(leaf));
            sources = leaf.dual()
                    ? new Source[] {new Source(leaf.id(), lo, hi, after), new Source(leaf.dualOf(), lo, hi, after)}
                    : new Source[] {new Source(leaf.id(), lo, hi, after)};
        }
    }

    private Bound tighterLower(Bound user, ByteBuffer leafLower) {
        if (leafLower == null) {
            return user;
        }
        if (user.value() == null || index.compare(leafLower, user.value()) > 0) {
            return new Bound(leafLower, true);
        }
        return user;
    }

    private Bound tighterUpper(Bound user, ByteBuffer leafUpper) {
        if (leafUpper == null) {
            return user;
        }
        if (user.value() == null || index.compare(leafUpper, user.value()) <= 0) {
            return new Bound(leafUpper, false);
        }
        return user;
    }

    int compare(Position a, Position b) {
        return compare(index, a, b);
    }

    /** The index's order of entries: by value, then partition key, then clustering (both as unsigned bytes). */
    static int compare(RangeIndex index, Position a, Position b) {
        int c = index.compare(a.value(), b.value());
        if (c != 0) {
            return c;
        }
        c = ByteBufferUtil.compareUnsigned(a.pk(), b.pk());
        return c != 0 ? c : ByteBufferUtil.compareUnsigned(a.ck(), b.ck());
    }

    /** One partition (leaf) of the index table, read in batches after a position. */
    private final class Source {
        final long leaf;
        final Bound lo;
        final Bound hi;
        Position last;
        final ArrayDeque<Position> buffer = new ArrayDeque<>();
        boolean exhausted;

        Source(long leaf, Bound lo, Bound hi, Position after) {
            this.leaf = leaf;
            this.lo = lo;
            this.hi = hi;
            this.last = after;
        }

        Position peek() {
            if (buffer.isEmpty() && !exhausted) {
                fill();
            }
            return buffer.peek();
        }

        private void fill() {
            StringBuilder cql = new StringBuilder("SELECT value, pk, ck, WRITETIME(live) AS written FROM ")
                    .append(index.tables().q(index.tables().entries()))
                    .append(" WHERE leaf = ?");
            List<Object> values = new ArrayList<>();
            values.add(leaf);
            boolean useAfter = last != null
                    && (lo.value() == null
                            || (lo.inclusive()
                                    ? index.compare(last.value(), lo.value()) >= 0
                                    : index.compare(last.value(), lo.value()) > 0));
            if (useAfter) {
                cql.append(" AND (value, pk, ck) > (?, ?, ?)");
                values.add(last.value());
                values.add(last.pk());
                values.add(last.ck());
            } else if (lo.value() != null) {
                cql.append(lo.inclusive() ? " AND (value) >= (?)" : " AND (value) > (?)");
                values.add(lo.value());
            }
            if (hi.value() != null) {
                cql.append(hi.inclusive() ? " AND (value) <= (?)" : " AND (value) < (?)");
                values.add(hi.value());
            }
            cql.append(" LIMIT ").append(batch);
            UntypedResultSet rows = QueryProcessor.execute(cql.toString(), level, values.toArray());
            partitionReads++;
            int n = 0;
            for (UntypedResultSet.Row r : rows) {
                Position p = new Position(
                        r.getBytes("value"), r.getBytes("pk"), r.getBytes("ck"), leaf, r.getLong("written"));
                buffer.add(p);
                last = p;
                n++;
            }
            exhausted = n < batch;
        }
    }
}
