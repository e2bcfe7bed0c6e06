package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.function.BiConsumer;
import java.util.function.Consumer;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.UntypedResultSet;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.service.StorageProxy;
import org.apache.cassandra.transport.Dispatcher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Splits full leaves, one step at a time, on one node (docs/range-queries.md, "Leaf splits").
 * A split of leaf O at value b goes through three directory versions, each a lightweight
 * transaction on the directory:
 *
 * <ol>
 *   <li><b>dual</b>: a new leaf N takes O's values from b on; writers that know it write those
 *       entries to both N and O, readers read both. Nodes that do not know it yet write and read
 *       O alone, which still has everything.
 *   <li>once every node reports that no operation on it acts on an older version (each node
 *       records the oldest version its writes and reads in progress use), O's entries from b on
 *       are copied to N, and N is <b>moved</b>: writers and readers use N alone.
 *   <li>once every node reports the same of that version, O's copies from b on are deleted and N
 *       is <b>live</b>.
 * </ol>
 *
 * Every full leaf splits at once, in the same three versions (a load that fills leaves faster
 * than they split needs a few rounds, not one per leaf); new splits start when the last ones are
 * done. A node that is down holds the splits at their step (they resume when the node is back):
 * no node ever reads a leaf that lacks an entry it should have.
 */
final class LeafSplitter {
    private static final Logger logger = LoggerFactory.getLogger(LeafSplitter.class);
    private static final int COPY_BATCH = 1000;
    /** Splits started at once, at most (each leaf a split starts is read whole at that step). */
    private static final int MAX_SPLITS = 64;

    private final RangeIndex index;
    private final RangeTables t;

    LeafSplitter(RangeIndex index) {
        this.index = index;
        this.t = index.tables();
    }

    /**
     * Advances the splits in progress (all at one step: they started together), or, when none is,
     * recounts every leaf the counters call full and starts a split of each that is.
     */
    void step() {
        LeafDirectory<ByteBuffer> d = index.loadDirectory();
        Map<Long, UntypedResultSet.Row> rows = index.directoryRows;
        List<LeafDirectory.Leaf<ByteBuffer>> dual = new ArrayList<>();
        List<LeafDirectory.Leaf<ByteBuffer>> moved = new ArrayList<>();
        for (LeafDirectory.Leaf<ByteBuffer> leaf : d.leaves()) {
            String state = rows.get(leaf.id()).getString("state");
            if ("dual".equals(state)) {
                dual.add(leaf);
            } else if ("moved".equals(state)) {
                moved.add(leaf);
            }
        }
        if (!dual.isEmpty() || !moved.isEmpty()) {
            if (index.nodes().everyNode(v -> v >= d.version(), false)) {
                // no operation on any node acts on an older version (and none is down): the next step
                if (!dual.isEmpty()) {
                    move(d, dual, rows);
                } else {
                    settle(d, moved, rows);
                }
            }
            return;
        }
        Map<Long, Long> counters = index.directoryWritten; // read with the directory above
        List<Statement> changes = new ArrayList<>();
        long newId = 0;
        for (LeafDirectory.Leaf<ByteBuffer> leaf : d.leaves()) {
            newId = Math.max(newId, leaf.id() + 1);
        }
        int splits = 0;
        for (LeafDirectory.Leaf<ByteBuffer> leaf : d.leaves()) {
            UntypedResultSet.Row r = rows.get(leaf.id());
            long base = r.has("counted_at") ? r.getLong("counted_at") : 0;
            long counted = r.has("entry_count") ? r.getLong("entry_count") : 0;
            long counter = counters.getOrDefault(leaf.id(), 0L);
            if (counted + (counter - base) > index.leafSize() && splits < MAX_SPLITS) {
                if (recount(leaf, counter, newId + splits, changes)) {
                    splits++;
                }
            }
        }
        if (!changes.isEmpty() && lwt(d.version(), splits > 0, changes) && splits > 0) {
            logger.info("Needle range index {}: splitting {} leaves", t.index(), splits);
        }
    }

    /** One statement of a batch on the directory's partition. */
    private record Statement(String cql, Object... values) {}

    /**
     * Counts a leaf the counters call full; adds to {@code changes} its split at its median value
     * into leaf {@code newId} (and returns true) if it is full, else its count.
     */
    private boolean recount(LeafDirectory.Leaf<ByteBuffer> leaf, long counter, long newId, List<Statement> changes) {
        List<ByteBuffer> values = new ArrayList<>();
        forEachPage(leaf.id(), null, null, "value, pk, ck", page -> {
            for (UntypedResultSet.Row r : page) {
                values.add(r.getBytes("value"));
            }
        });
        int n = values.size();
        String setCount =
                "UPDATE " + t.q(t.directory()) + " SET entry_count = ?, counted_at = ? WHERE part = 0 AND leaf = ?";
        if (n <= index.leafSize()) {
            changes.add(new Statement(setCount, (long) n, counter, leaf.id()));
            return false;
        }
        int at = n / 2;
        while (at < n && index.compare(values.get(at), values.get(0)) == 0) {
            at++; // the split value must be above the leaf's lowest, or the left leaf keeps everything
        }
        if (at == n) {
            logger.warn(
                    "Needle range index {}: leaf {} holds {} entries of one value; it cannot split",
                    t.index(),
                    leaf.id(),
                    n);
            changes.add(new Statement(setCount, 0L, counter, leaf.id()));
            return false;
        }
        changes.add(new Statement(
                "INSERT INTO " + t.q(t.directory())
                        + " (part, leaf, lower, state, old_leaf, entry_count, counted_at) VALUES (0, ?, ?, 'dual', ?, ?, 0)",
                newId,
                values.get(at),
                leaf.id(),
                (long) (n - at)));
        changes.add(new Statement(setCount, (long) at, counter, leaf.id()));
        logger.info("Needle range index {}: leaf {} ({} entries) splits into leaf {}", t.index(), leaf.id(), n, newId);
        return true;
    }

    /** Copies each new leaf's entries from its old leaf, then makes the new leaves the only ones written and read. */
    private void move(
            LeafDirectory<ByteBuffer> d,
            List<LeafDirectory.Leaf<ByteBuffer>> dual,
            Map<Long, UntypedResultSet.Row> rows) {
        advance(d, dual, rows, "moved", (old, leaf) -> {
            long copied = copy(old, leaf.id(), leaf.lowerBound(), d.upperBound(leaf));
            logger.info(
                    "Needle range index {}: copied {} entries of leaf {} to leaf {}",
                    t.index(),
                    copied,
                    old,
                    leaf.id());
        });
    }

    /** Deletes the old leaves' copies of the new leaves' entries; the splits are done. */
    private void settle(
            LeafDirectory<ByteBuffer> d,
            List<LeafDirectory.Leaf<ByteBuffer>> moved,
            Map<Long, UntypedResultSet.Row> rows) {
        boolean done = advance(d, moved, rows, "live", (old, leaf) -> {
            ByteBuffer upper = d.upperBound(leaf);
            List<Object> values = new ArrayList<>(List.of(old, leaf.lowerBound()));
            if (upper != null) {
                values.add(upper);
            }
            QueryProcessor.execute(
                    "DELETE FROM " + t.q(t.entries()) + " WHERE leaf = ? AND value >= ?"
                            + (upper == null ? "" : " AND value < ?"),
                    ConsistencyLevel.QUORUM,
                    values.toArray());
        });
        if (done) {
            logger.info("Needle range index {}: {} splits done", t.index(), moved.size());
        }
    }

    /**
     * Does {@code work} for each of {@code leaves} (given the leaf it split from), then moves them
     * all to state {@code next} in one transaction on directory version {@code d}; true if it applied.
     */
    private boolean advance(
            LeafDirectory<ByteBuffer> d,
            List<LeafDirectory.Leaf<ByteBuffer>> leaves,
            Map<Long, UntypedResultSet.Row> rows,
            String next,
            BiConsumer<Long, LeafDirectory.Leaf<ByteBuffer>> work) {
        List<Statement> changes = new ArrayList<>();
        for (LeafDirectory.Leaf<ByteBuffer> leaf : leaves) {
            work.accept(rows.get(leaf.id()).getLong("old_leaf"), leaf);
            changes.add(new Statement(
                    "UPDATE " + t.q(t.directory()) + " SET state = ? WHERE part = 0 AND leaf = ?", next, leaf.id()));
        }
        return lwt(d.version(), true, changes);
    }

    /** Copies the entries of leaf {@code from} in [lower, upper) to leaf {@code to}, with their TTLs. */
    private long copy(long from, long to, ByteBuffer lower, ByteBuffer upper) {
        long[] n = {0};
        forEachPage(from, lower, upper, "value, pk, ck, TTL(live) AS t, WRITETIME(live) AS w", page -> {
            List<Mutation> out = new ArrayList<>();
            for (UntypedResultSet.Row r : page) {
                EntryWriter.Entry e = new EntryWriter.Entry(
                        r.getBytes("value"),
                        r.getBytes("pk"),
                        r.getBytes("ck"),
                        r.getLong("w"),
                        r.has("t") ? Math.max(1, r.getInt("t") - EntryWriter.TTL_MARGIN_SECONDS) : 0);
                out.add(EntryWriter.mutation(index, to, e));
            }
            if (!out.isEmpty()) {
                StorageProxy.mutate(out, ConsistencyLevel.QUORUM, Dispatcher.RequestTime.forImmediateExecution());
            }
            n[0] += out.size();
        });
        return n[0];
    }

    /**
     * Reads the entries of {@code leaf} whose value is in [lower, upper) (null: unbounded) at
     * QUORUM, {@link #COPY_BATCH} at a time in the leaf's order, and hands each page to {@code
     * each}; {@code columns} must include value, pk and ck, where the next page starts.
     */
    private void forEachPage(
            long leaf, ByteBuffer lower, ByteBuffer upper, String columns, Consumer<UntypedResultSet> each) {
        String head = "SELECT " + columns + " FROM " + t.q(t.entries()) + " WHERE leaf = ?";
        String tail = (upper == null ? "" : " AND (value) < (?)") + " LIMIT " + COPY_BATCH;
        ByteBuffer[] after = null;
        UntypedResultSet page;
        do {
            List<Object> values = new ArrayList<>(List.of(leaf));
            String from = "";
            if (after != null) {
                from = " AND (value, pk, ck) > (?, ?, ?)";
                values.addAll(List.of(after));
            } else if (lower != null) {
                from = " AND (value) >= (?)";
                values.add(lower);
            }
            if (upper != null) {
                values.add(upper);
            }
            page = QueryProcessor.execute(head + from + tail, ConsistencyLevel.QUORUM, values.toArray());
            each.accept(page);
            for (UntypedResultSet.Row r : page) {
                after = new ByteBuffer[] {r.getBytes("value"), r.getBytes("pk"), r.getBytes("ck")};
            }
        } while (page.size() == COPY_BATCH);
    }

    /**
     * Applies {@code changes} (statements on the directory's partition) in one lightweight
     * transaction if the directory is still at {@code version}, moving it to the next version when
     * {@code bump}; returns whether it applied.
     */
    private boolean lwt(long version, boolean bump, List<Statement> changes) {
        List<Object> all = new ArrayList<>();
        StringBuilder batch = new StringBuilder("BEGIN BATCH ");
        batch.append("UPDATE ").append(t.q(t.directory())).append(" SET version = ? WHERE part = 0 IF version = ?; ");
        all.add(bump ? version + 1 : version);
        all.add(version);
        for (Statement c : changes) {
            batch.append(c.cql()).append("; ");
            all.addAll(List.of(c.values()));
        }
        batch.append("APPLY BATCH");
        UntypedResultSet r = QueryProcessor.execute(batch.toString(), ConsistencyLevel.QUORUM, all.toArray());
        return !r.isEmpty() && r.one().getBoolean("[applied]");
    }
}
