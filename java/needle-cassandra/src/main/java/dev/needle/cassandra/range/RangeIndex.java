package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.LongAdder;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.UntypedResultSet;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.sai.StorageAttachedIndex;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * One ordered index on one node: its tables, its cached leaf directory, and what every node
 * recorded about it ({@link NodeRecords}). The query handler writes entries
 * ({@link EntryWriter}) and answers range reads ({@link RangeRead}) through it; {@link
 * LeafSplitter} changes its directory.
 *
 * <p>The directory is refreshed every second ({@link #refresh}); each node then records the
 * version it acts on in the nodes table, which is how a split knows that every node writes and
 * reads by the new leaves (docs/range-queries.md, "Leaf splits").
 */
public final class RangeIndex {
    private static final Logger logger = LoggerFactory.getLogger(RangeIndex.class);

    /** Entries per leaf before a split, unless the index's {@code leaf_size} option says otherwise. */
    public static final int DEFAULT_LEAF_SIZE = 20_000;

    private final TableMetadata base;
    private final ColumnMetadata column;
    private final UUID indexId;
    private final RangeTables tables;
    private final int leafSize;
    private volatile LeafDirectory<ByteBuffer> directory;
    /** The lowest and highest values indexed as the last directory load read them; null if unknown. */
    private volatile ByteBuffer[] extremes;
    /** The directory's rows as last read (the splitter reads states and counter bases from them). */
    volatile Map<Long, UntypedResultSet.Row> directoryRows = Map.of();
    /** The entries written to each leaf (the counters) as they were when the directory was last loaded. */
    volatile Map<Long, Long> directoryWritten = Map.of();

    private final RangePlans plans;
    private final NodeRecords nodes;
    private volatile RangePlanner planner;

    private final Map<Long, LongAdder> written = new ConcurrentHashMap<>();
    private final Map<Long, AtomicInteger> inUse = new ConcurrentHashMap<>();

    RangeIndex(TableMetadata base, ColumnMetadata column, UUID indexId, String indexName, int leafSize) {
        this.base = base;
        this.column = column;
        this.indexId = indexId;
        this.tables = new RangeTables(
                base.keyspace, indexName, column.type.asCQL3Type().toString());
        this.leafSize = leafSize;
        this.plans = new RangePlans(base.keyspace, indexName);
        this.nodes = new NodeRecords(tables, indexId);
    }

    /** What every node recorded about this index: the directory version it acts on, whether it indexed its old rows. */
    public NodeRecords nodes() {
        return nodes;
    }

    /** What this index's range queries did on this node (needle_views.range_plans, metrics). */
    public RangePlans plans() {
        return plans;
    }

    public TableMetadata base() {
        return base;
    }

    /** The index's id in the schema. */
    public UUID id() {
        return indexId;
    }

    public ColumnMetadata column() {
        return column;
    }

    public RangeTables tables() {
        return tables;
    }

    public int leafSize() {
        return leafSize;
    }

    /**
     * This node's planner for queries on this index. Its starting coefficients come from the
     * range-mixes run of 2026-11-28 05:21 UTC (3 nodes on 2 cores, 200,000 rows; medians of the
     * short and medium mixes; before rows were fetched by key lists, which made the index's cost
     * per row about a fifth lower against the scan's): index 25 ms + 0.11 ms a row, SAI 140 ms +
     * 0.03 ms a row, scan 0.0033 ms per indexed entry (every node reads everything) + 0.015 ms a
     * row; a client's own scan 0.0027 ms per entry + 0.0085 ms a row (its short and long mixes).
     * They are worth five queries; the queries it observes (and clients' reports of their scans)
     * correct them.
     */
    public RangePlanner planner() {
        RangePlanner p = planner;
        if (p == null) {
            double scanFixed = Math.max(20, 0.0033 * directory().totalRows());
            p = new RangePlanner(
                    Map.of(
                            RangePlanner.Strategy.INDEX, new double[] {25, 0.11},
                            RangePlanner.Strategy.SAI, new double[] {140, 0.03},
                            RangePlanner.Strategy.SCAN, new double[] {scanFixed, 0.015},
                            RangePlanner.Strategy.CLIENT_SCAN,
                                    new double[] {
                                        Math.max(20, 0.0027 * directory().totalRows()), 0.0085
                                    }),
                    5,
                    16,
                    3);
            planner = p;
        }
        return p;
    }

    /** Whether Cassandra's SAI indexes {@code column} of the table of {@code cfs}. */
    public static boolean saiIndexes(ColumnFamilyStore cfs, ColumnMetadata column) {
        for (Index i : cfs.indexManager.listIndexes()) {
            if (i instanceof StorageAttachedIndex && i.dependsOn(column)) {
                return true;
            }
        }
        return false;
    }

    /** The level index entries are written and read at for a statement at {@code cl}: at least a quorum. */
    public static ConsistencyLevel entryLevel(ConsistencyLevel cl) {
        return switch (cl) {
            case ALL, EACH_QUORUM, QUORUM, LOCAL_QUORUM -> cl;
            case LOCAL_ONE -> ConsistencyLevel.LOCAL_QUORUM;
            default -> ConsistencyLevel.QUORUM;
        };
    }

    /** The directory this node acts on, read at once if it has none yet. */
    public LeafDirectory<ByteBuffer> directory() {
        LeafDirectory<ByteBuffer> d = directory;
        if (d == null) {
            d = loadDirectory();
        }
        return d;
    }

    /**
     * The directory for one operation (a write's entries, a page of a read), counted as in use
     * until {@link #release}: the version this node reports is the oldest one in use, so a split
     * moves on only when no operation anywhere still acts on the version before it.
     */
    LeafDirectory<ByteBuffer> acquire() {
        while (true) {
            LeafDirectory<ByteBuffer> d = directory();
            inUse.computeIfAbsent(d.version(), v -> new AtomicInteger()).incrementAndGet();
            if (directory == d) {
                return d;
            }
            release(d); // refreshed meanwhile: take the new one (the refresh may not have counted this)
        }
    }

    void release(LeafDirectory<ByteBuffer> d) {
        inUse.get(d.version()).decrementAndGet();
    }

    /** The oldest directory version an operation on this node still acts on, at most {@code current}. */
    private long oldestInUse(long current) {
        long oldest = current;
        for (Map.Entry<Long, AtomicInteger> e : inUse.entrySet()) {
            if (e.getValue().get() > 0) {
                oldest = Math.min(oldest, e.getKey());
            }
        }
        return oldest;
    }

    /** Counts an entry written to a leaf (the splitter's hint of which leaves to count). */
    void wrote(long leaf) {
        written.computeIfAbsent(leaf, l -> new LongAdder()).increment();
    }

    /** Creates the tables and the first directory if missing (idempotent, on any node). */
    void ensureTables() {
        tables.create();
        QueryProcessor.execute(
                "INSERT INTO " + tables.q(tables.directory())
                        + " (part, version, leaf, state, old_leaf, entry_count) VALUES (0, 1, 0, 'live', -1, 0)"
                        + " IF NOT EXISTS",
                ConsistencyLevel.QUORUM);
    }

    /** Reads the directory at QUORUM and makes it this node's. */
    LeafDirectory<ByteBuffer> loadDirectory() {
        UntypedResultSet rows = QueryProcessor.execute(
                "SELECT version, leaf, lower, state, old_leaf, entry_count, counted_at FROM "
                        + tables.q(tables.directory()) + " WHERE part = 0",
                ConsistencyLevel.QUORUM);
        if (rows.isEmpty()) {
            throw new IllegalStateException("the leaf directory of index " + tables.index() + " on " + base
                    + " is missing (table " + tables.q(tables.directory()) + ")");
        }
        long version = rows.iterator().next().getLong("version");
        List<LeafDirectory.Leaf<ByteBuffer>> leaves = new ArrayList<>();
        Map<Long, UntypedResultSet.Row> rowsOf = new HashMap<>();
        Map<Long, Long> written = writtenCounts();
        for (UntypedResultSet.Row r : rows) {
            long leaf = r.getLong("leaf");
            long counted = r.has("entry_count") ? Math.max(0, r.getLong("entry_count")) : 0;
            long since = written.getOrDefault(leaf, 0L) - (r.has("counted_at") ? r.getLong("counted_at") : 0);
            leaves.add(new LeafDirectory.Leaf<>(
                    leaf,
                    r.has("lower") ? r.getBytes("lower") : null,
                    counted + Math.max(0, since), // the entries last counted and those written since
                    "dual".equals(r.getString("state")) ? r.getLong("old_leaf") : -1));
            rowsOf.put(r.getLong("leaf"), r);
        }
        leaves.sort((a, b) ->
                a.lowerBound() == null ? -1 : b.lowerBound() == null ? 1 : compare(a.lowerBound(), b.lowerBound()));
        LeafDirectory<ByteBuffer> d = LeafDirectory.of(leaves, this::compare, version);
        directory = d;
        directoryRows = rowsOf;
        directoryWritten = written;
        try {
            extremes = readExtremes(d);
        } catch (RuntimeException e) {
            // estimates only: the last extremes (or the query's bounds) serve until the next load
            logger.debug("Needle range index {}: reading its lowest and highest values failed", tables.index(), e);
        }
        return d;
    }

    /**
     * The lowest and highest values indexed (the first leaf's first entry, the last leaf's last,
     * or its old leaf's while a split of it is not settled); null if the index is empty. Two reads
     * of one entry each, at ONE: the planner's estimate interpolates the first and last leaf
     * between them, not between the query's bounds.
     */
    private ByteBuffer[] readExtremes(LeafDirectory<ByteBuffer> d) {
        List<LeafDirectory.Leaf<ByteBuffer>> leaves = d.leaves();
        ByteBuffer min = edge(leaves.get(0).id(), "ASC");
        LeafDirectory.Leaf<ByteBuffer> last = leaves.get(leaves.size() - 1);
        ByteBuffer max = edge(last.id(), "DESC");
        if (last.dual()) {
            ByteBuffer old = edge(last.dualOf(), "DESC");
            if (max == null || (old != null && compare(old, max) > 0)) {
                max = old;
            }
        }
        return min == null || max == null ? null : new ByteBuffer[] {min, max};
    }

    private ByteBuffer edge(long leaf, String order) {
        UntypedResultSet r = QueryProcessor.execute(
                "SELECT value FROM " + tables.q(tables.entries()) + " WHERE leaf = ? ORDER BY value " + order
                        + " LIMIT 1",
                ConsistencyLevel.ONE,
                leaf);
        return r.isEmpty() ? null : r.one().getBytes("value");
    }

    /** Entries written to each leaf since the index was created, as the nodes have counted them. */
    Map<Long, Long> writtenCounts() {
        Map<Long, Long> out = new HashMap<>();
        for (UntypedResultSet.Row r : QueryProcessor.execute(
                "SELECT leaf, written FROM " + tables.q(tables.counts()), ConsistencyLevel.ONE)) {
            out.put(r.getLong("leaf"), r.getLong("written"));
        }
        return out;
    }

    /**
     * The rows expected in a value range (null: unbounded), from the directory's entry counts (an
     * equi-depth histogram): numeric columns interpolate inside the leaves a bounded range covers
     * in part (the first leaf from the lowest value indexed, the last up to the highest), other
     * types count such a leaf by half; an unbounded range counts every leaf it reaches whole.
     */
    public double estimateRows(ByteBuffer from, ByteBuffer to) {
        LeafDirectory<ByteBuffer> d = directory();
        if (from != null && to != null) {
            ByteBuffer[] e = extremes;
            return d.estimateRows(from, to, this::position, e == null ? from : e[0], e == null ? to : e[1]);
        }
        List<LeafDirectory.Leaf<ByteBuffer>> leaves = d.leaves();
        double rows = 0;
        for (int i = 0; i < leaves.size(); i++) {
            ByteBuffer lower = leaves.get(i).lowerBound();
            ByteBuffer upper = i + 1 < leaves.size() ? leaves.get(i + 1).lowerBound() : null;
            if ((from == null || upper == null || compare(upper, from) > 0)
                    && (to == null || lower == null || compare(lower, to) < 0)) {
                rows += leaves.get(i).rows();
            }
        }
        return rows;
    }

    /** A value's place on a line, for interpolation: the number of a numeric column, else NaN. */
    private double position(ByteBuffer value) {
        Object v = column.type.compose(value);
        return v instanceof Number n ? n.doubleValue() : Double.NaN;
    }

    int compare(ByteBuffer a, ByteBuffer b) {
        return column.type.compare(a, b);
    }

    /**
     * Once a second: reloads the directory, records the oldest version this node acts on and
     * learns whether every node is ready ({@link NodeRecords}), and adds the counts of written
     * entries.
     */
    void refresh() {
        LeafDirectory<ByteBuffer> d = loadDirectory();
        nodes.recordAndLearn(oldestInUse(d.version()));
        for (Map.Entry<Long, LongAdder> e : written.entrySet()) {
            long n = e.getValue().sumThenReset();
            if (n > 0) {
                QueryProcessor.execute(
                        "UPDATE " + tables.q(tables.counts()) + " SET written = written + ? WHERE leaf = ?",
                        ConsistencyLevel.ONE,
                        n,
                        e.getKey());
            }
        }
    }

    void logRefreshFailure(Exception e) {
        logger.warn("Needle range index {}.{}: refresh failed (retried in a second)", base.keyspace, tables.index(), e);
    }
}
