package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
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
 * A node that is down holds the split at its step (it resumes when the node is back): no node
 * ever reads a leaf that lacks an entry it should have.
 */
final class LeafSplitter {
    private static final Logger logger = LoggerFactory.getLogger(LeafSplitter.class);
    private static final int COPY_BATCH = 1000;
    private final RangeIndex index;
    private final RangeTables t;

    LeafSplitter(RangeIndex index) {
        this.index = index;
        this.t = index.tables();
    }

    /** Advances a split in progress, or starts one if a leaf is full. */
    void step() {
        LeafDirectory<ByteBuffer> d = index.loadDirectory();
        Map<Long, UntypedResultSet.Row> rows = index.directoryRows;
        for (LeafDirectory.Leaf<ByteBuffer> leaf : d.leaves()) {
            String state = rows.get(leaf.id()).getString("state");
            if ("dual".equals(state) || "moved".equals(state)) {
                advance(d, leaf, state, rows.get(leaf.id()).getLong("old_leaf"));
                return; // one split at a time
            }
        }
        Map<Long, Long> counters = index.directoryWritten; // read with the directory above
        for (LeafDirectory.Leaf<ByteBuffer> leaf : d.leaves()) {
            UntypedResultSet.Row r = rows.get(leaf.id());
            long base = r.has("counted_at") ? r.getLong("counted_at") : 0;
            long counted = r.has("entry_count") ? r.getLong("entry_count") : 0;
            long counter = counters.getOrDefault(leaf.id(), 0L);
            if (counted + (counter - base) > index.leafSize()) {
                recount(d, leaf, counter);
                return;
            }
        }
    }

    /** Counts a leaf the counters call full; splits it at its median value if it is. */
    private void recount(LeafDirectory<ByteBuffer> d, LeafDirectory.Leaf<ByteBuffer> leaf, long counter) {
        List<ByteBuffer> values = new ArrayList<>();
        forEachPage(leaf.id(), null, null, "value, pk, ck", page -> {
            for (UntypedResultSet.Row r : page) {
                values.add(r.getBytes("value"));
            }
        });
        int n = values.size();
        if (n <= index.leafSize()) {
            lwt(
                    d.version(),
                    false,
                    "UPDATE " + t.q(t.directory()) + " SET entry_count = ?, counted_at = ? WHERE part = 0 AND leaf = ?",
                    (long) n,
                    counter,
                    leaf.id());
            return;
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
            lwt(
                    d.version(),
                    false,
                    "UPDATE " + t.q(t.directory()) + " SET entry_count = ?, counted_at = ? WHERE part = 0 AND leaf = ?",
                    0L,
                    counter,
                    leaf.id());
            return;
        }
        long newId = 0;
        for (LeafDirectory.Leaf<ByteBuffer> l : d.leaves()) {
            newId = Math.max(newId, l.id() + 1);
        }
        boolean applied = lwt(
                d.version(),
                true,
                "INSERT INTO " + t.q(t.directory())
                        + " (part, leaf, lower, state, old_leaf, entry_count, counted_at) VALUES (0, ?, ?, 'dual', ?, ?, 0)",
                newId,
                values.get(at),
                leaf.id(),
                (long) (n - at));
        if (applied) {
            lwt(
                    d.version() + 1,
                    false,
                    "UPDATE " + t.q(t.directory()) + " SET entry_count = ?, counted_at = ? WHERE part = 0 AND leaf = ?",
                    (long) at,
                    counter,
                    leaf.id());
            logger.info(
                    "Needle range index {}: splitting leaf {} ({} entries) into leaf {}",
                    t.index(),
                    leaf.id(),
                    n,
                    newId);
        }
    }

    /** The next step of the split that made {@code leaf} from {@code old}. */
    private void advance(LeafDirectory<ByteBuffer> d, LeafDirectory.Leaf<ByteBuffer> leaf, String state, long old) {
        if (!index.everyNode(v -> v >= d.version(), false)) {
            return; // an operation on some node may still act on an older version (or a node is down): later
        }
        int i = d.leaves().indexOf(leaf);
        ByteBuffer upper = i + 1 < d.leaves().size() ? d.leaves().get(i + 1).lowerBound() : null;
        if ("dual".equals(state)) {
            long copied = copy(old, leaf.id(), leaf.lowerBound(), upper);
            lwt(
                    d.version(),
                    true,
                    "UPDATE " + t.q(t.directory()) + " SET state = 'moved' WHERE part = 0 AND leaf = ?",
                    leaf.id());
            logger.info(
                    "Needle range index {}: copied {} entries of leaf {} to leaf {}",
                    t.index(),
                    copied,
                    old,
                    leaf.id());
        } else {
            if (upper == null) {
                QueryProcessor.execute(
                        "DELETE FROM " + t.q(t.entries()) + " WHERE leaf = ? AND value >= ?",
                        ConsistencyLevel.QUORUM,
                        old,
                        leaf.lowerBound());
            } else {
                QueryProcessor.execute(
                        "DELETE FROM " + t.q(t.entries()) + " WHERE leaf = ? AND value >= ? AND value < ?",
                        ConsistencyLevel.QUORUM,
                        old,
                        leaf.lowerBound(),
                        upper);
            }
            lwt(
                    d.version(),
                    true,
                    "UPDATE " + t.q(t.directory()) + " SET state = 'live' WHERE part = 0 AND leaf = ?",
                    leaf.id());
            logger.info("Needle range index {}: split of leaf {} into leaf {} done", t.index(), old, leaf.id());
        }
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
     * Applies {@code cql} (on the directory partition) if the directory is still at {@code
     * version}, moving it to the next version when {@code bump}.
     */
    private boolean lwt(long version, boolean bump, String cql, Object... values) {
        List<Object> all = new ArrayList<>();
        StringBuilder batch = new StringBuilder("BEGIN BATCH ");
        batch.append("UPDATE ").append(t.q(t.directory())).append(" SET version = ? WHERE part = 0 IF version = ?; ");
        all.add(bump ? version + 1 : version);
        all.add(version);
        batch.append(cql).append("; APPLY BATCH");
        all.addAll(List.of(values));
        UntypedResultSet r = QueryProcessor.execute(batch.toString(), ConsistencyLevel.QUORUM, all.toArray());
        return !r.isEmpty() && r.one().getBoolean("[applied]");
    }
}
