package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.Statement;
import dev.needle.range.RangeIndexStatus;
import dev.needle.range.RangeQuery;
import dev.needle.range.TokenRangeScan;
import dev.needle.testkit.LocalCluster;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import java.util.concurrent.atomic.LongAdder;
import java.util.function.BiConsumer;
import org.junit.jupiter.api.Test;

/**
 * Needle's ordered index ({@link NeedleRangeIndex}) on 3 nodes with replication factor 3, at
 * QUORUM: rows written before the index exists and after, random inserts, updates of the indexed
 * value and of other columns, deletes, nulls and batches, 32 at a time; leaves small enough to split many times
 * while the test runs; a node killed with kill -9, started again and repaired; flushes, major and
 * split-output compactions, garbage collection, upgradesstables, scrub, cleanup and
 * relocatesstables of the base table and the index's tables on random nodes. Every range answer from the
 * index (asked for by the custom payload), read page by page with random page sizes, must equal a
 * model of the writes, come in the column's order, and equal the answer of the stock way (every
 * node scanned, asked for too, at the same page size: splits read on from their last row and
 * pages read ahead), of the index's first page followed by the scan of the rest of the range
 * (asked for too), and of the planner's choice, while reads remove the entries they find
 * superseded. One new row in eight takes the value of a row already written, so that entries
 * tie on the value and pages end between them.
 */
class RangeIndexIT {
    private static final String INDEX_CLASS = "dev.needle.cassandra.NeedleRangeIndex";
    private static final Map<String, ByteBuffer> STOCK = payload("stock");
    private static final Map<String, ByteBuffer> INDEX = payload("index");
    /** The index's first page, then the scan of the rest of the range (the planner's switch after an overrun). */
    private static final Map<String, ByteBuffer> SWITCH = payload("switch");

    private static Map<String, ByteBuffer> payload(String strategy) {
        return Map.of("needle.range", ByteBuffer.wrap(strategy.getBytes(StandardCharsets.UTF_8)));
    }

    private record Value(double k, String v) {}

    /**
     * The node-local operations that write, rewrite or swap the SSTables of the base table and of
     * the index's tables (every table of the keyspace), run in turn while the test writes and reads.
     * Scrub runs on the base table alone: Cassandra 5.0.9's scrub drops every partition that holds
     * a range tombstone (a {@code ClassCastException} in {@code SortedTableScrubber}'s row-merging
     * iterator), on any table, and leaves an SSTable whose compression metadata disagrees with its
     * data, which later compactions and repairs reject; the index's entries table has range
     * tombstones by design (a leaf split deletes the moved entries with one).
     */
    private static final List<String[]> SSTABLE_OPERATIONS = List.of(
            new String[] {"flush", "ri"},
            new String[] {"compact", "ri"},
            new String[] {"garbagecollect", "ri"},
            new String[] {"flush", "ri"},
            new String[] {"upgradesstables", "-a", "ri"},
            new String[] {"scrub", "ri", "t"},
            new String[] {"cleanup", "ri"},
            new String[] {"relocatesstables", "ri"},
            new String[] {"compact", "--split-output", "ri"});

    /** Operations between two of the {@link #SSTABLE_OPERATIONS}. */
    private static final int SSTABLE_OPERATION_EVERY = 400;

    /** Range queries per thousand operations (the rest are writes). */
    private static final int COMPARE_PER_MILLE = 30;

    /** Writes in flight at once, each on rows no other write in flight touches. */
    private static final int IN_FLIGHT = 32;

    /**
     * The test's writes, up to {@link #IN_FLIGHT} at once from the driver's connections to every
     * node (so the index's entries and leaf splits see concurrent writers), never two on one row
     * at once: the model, updated when a write is sent, is what the table holds once they are all
     * acknowledged. Awaited before every range query, kill and restart; a write that fails fails
     * the test.
     */
    private static final class Writes {
        private record Pending(CompletableFuture<?> done, long[] ids) {}

        private final ArrayDeque<Pending> pending = new ArrayDeque<>();
        private final Set<Long> busy = new HashSet<>();

        void submit(CqlSession s, Statement<?> write, long... ids) {
            for (long id : ids) {
                if (busy.contains(id)) {
                    awaitAll();
                    break;
                }
            }
            if (pending.size() == IN_FLIGHT) {
                await(pending.poll());
            }
            pending.add(new Pending(s.executeAsync(write).toCompletableFuture(), ids));
            for (long id : ids) {
                busy.add(id);
            }
        }

        void awaitAll() {
            while (!pending.isEmpty()) {
                await(pending.poll());
            }
        }

        private void await(Pending p) {
            try {
                p.done().join();
            } catch (CompletionException e) {
                throw new AssertionError(
                        "a write of rows " + Arrays.toString(p.ids()) + " failed: " + e.getCause(), e.getCause());
            }
            for (long id : p.ids()) {
                busy.remove(id);
            }
        }
    }

    /**
     * What the table holds once the writes sent are acknowledged: each row's values by id, and
     * a row picked at random in constant time (the model grows to 10^4-10^5 rows).
     */
    private static final class Model {
        private final Map<Long, Value> rows = new HashMap<>();
        private final List<Long> ids = new ArrayList<>();
        private final Map<Long, Integer> at = new HashMap<>();

        /** Sets row {@code id}'s values, adding the row if it is new. */
        void put(long id, Value v) {
            if (rows.put(id, v) == null) {
                at.put(id, ids.size());
                ids.add(id);
            }
        }

        Value get(long id) {
            return rows.get(id);
        }

        void remove(long id) {
            rows.remove(id);
            int i = at.remove(id);
            long last = ids.remove(ids.size() - 1);
            if (last != id) {
                ids.set(i, last);
                at.put(last, i);
            }
        }

        long pick(SplittableRandom r) {
            return ids.get(r.nextInt(ids.size()));
        }

        boolean isEmpty() {
            return ids.isEmpty();
        }

        int size() {
            return ids.size();
        }

        void forEach(BiConsumer<Long, Value> each) {
            rows.forEach(each);
        }
    }

    @Test
    void rangeAnswersEqualTheModelAndTheStockWayThroughSplitsSSTableOperationsAKilledNodeAndARepair() throws Exception {
        long seed = Long.getLong("needle.it.seed", System.nanoTime());
        int ops = Integer.getInteger("needle.range.ops", 10_000);
        SplittableRandom r = new SplittableRandom(seed);
        Model model = new Model();
        List<Long> deleted = new ArrayList<>(); // rows deleted and not written since
        Map<Long, Double> deletedK = new HashMap<>(); // their values when deleted
        int compared = 0;
        Map<String, Integer> clientPlans = new TreeMap<>(); // strategies of the client-planned answers
        LongAdder switchedLater = new LongAdder(); // answers asked to switch that had a second page
        int maintenance = 0;
        long nextId = 0;
        try (LocalCluster cluster = LocalCluster.start(3);
                CqlSession s = cluster.session(1)) {
            s.execute("CREATE KEYSPACE ri WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}");
            s.execute("CREATE TABLE ri.t (id bigint PRIMARY KEY, k double, v text)");
            PreparedStatement insert = s.prepare("INSERT INTO ri.t (id, k, v) VALUES (?, ?, ?)");
            PreparedStatement setK = s.prepare("UPDATE ri.t SET k = ? WHERE id = ?");
            PreparedStatement setV = s.prepare("UPDATE ri.t SET v = ? WHERE id = ?");
            PreparedStatement delete = s.prepare("DELETE FROM ri.t WHERE id = ?");
            for (; nextId < 300; nextId++) { // rows the index finds when it is created
                double k = r.nextDouble();
                s.execute(quorum(insert.bind(nextId, k, "a" + nextId)));
                model.put(nextId, new Value(k, "a" + nextId));
            }
            s.execute("CREATE CUSTOM INDEX t_k ON ri.t (k) USING '" + INDEX_CLASS
                    + "' WITH OPTIONS = {'leaf_size': '64'}");
            awaitBuilt(s);
            PreparedStatement range = s.prepare("SELECT id, k, v FROM ri.t WHERE k >= ? AND k < ?");
            RangeQuery fromClient = RangeQuery.planned(TokenRangeScan.on(s, "ri", "t", "k")
                    .columns("id", "k", "v")
                    .consistency(ConsistencyLevel.QUORUM)
                    .pageSize(50)
                    .build());
            Writes writes = new Writes();
            for (int op = 0; op < ops; op++) {
                if (op == ops / 3) {
                    writes.awaitAll();
                    cluster.kill(3);
                } else if (op == 2 * ops / 3) {
                    writes.awaitAll();
                    cluster.startNode(3);
                    cluster.nodetool(1, "repair", "ri"); // node 3 missed a third of the writes
                    maintenance++;
                } else if (op % SSTABLE_OPERATION_EVERY == SSTABLE_OPERATION_EVERY / 2) {
                    // node 3 is down for the middle third: nodes 1 and 2 then; writes go on meanwhile
                    int node = op > ops / 3 && op < 2 * ops / 3 ? 1 + r.nextInt(2) : 1 + r.nextInt(3);
                    cluster.nodetool(node, SSTABLE_OPERATIONS.get(maintenance++ % SSTABLE_OPERATIONS.size()));
                }
                if (r.nextInt(1000) < COMPARE_PER_MILLE) {
                    writes.awaitAll();
                    compared += compare(s, range, fromClient, clientPlans, switchedLater, model, r, "op " + op);
                    continue;
                }
                int dice = r.nextInt(80);
                if ((dice < 35 || model.isEmpty()) && !deleted.isEmpty() && r.nextInt(5) == 0) {
                    // a deleted row written again, half the time at the value it had: the entry
                    // a read removed for the deletion must not hide it
                    int i = r.nextInt(deleted.size());
                    long id = deleted.get(i);
                    deleted.set(i, deleted.get(deleted.size() - 1));
                    deleted.remove(deleted.size() - 1);
                    double old = deletedK.remove(id);
                    double k = r.nextBoolean() && !Double.isNaN(old) ? old : r.nextDouble();
                    writes.submit(s, quorum(insert.bind(id, k, "r" + op)), id);
                    model.put(id, new Value(k, "r" + op));
                } else if (dice < 35 || model.isEmpty()) {
                    double tie = r.nextInt(8) == 0 && !model.isEmpty()
                            ? model.get(model.pick(r)).k()
                            : Double.NaN;
                    double k = Double.isNaN(tie) ? r.nextDouble() : tie; // NaN: the row picked has no value
                    writes.submit(s, quorum(insert.bind(nextId, k, "i" + op)), nextId);
                    model.put(nextId++, new Value(k, "i" + op));
                } else if (dice < 55) {
                    long id = model.pick(r);
                    double k = r.nextDouble();
                    writes.submit(s, quorum(setK.bind(k, id)), id);
                    model.put(id, new Value(k, model.get(id).v()));
                } else if (dice < 62) {
                    long id = model.pick(r);
                    writes.submit(s, quorum(setV.bind("u" + op, id)), id);
                    model.put(id, new Value(model.get(id).k(), "u" + op));
                } else if (dice < 72) {
                    long id = model.pick(r);
                    writes.submit(s, quorum(delete.bind(id)), id);
                    deleted.add(id);
                    deletedK.put(id, model.get(id).k());
                    model.remove(id);
                } else if (dice < 75) {
                    long id = model.pick(r);
                    writes.submit(s, quorum(setK.bind(null, id)), id); // no value: in no range
                    model.put(id, new Value(Double.NaN, model.get(id).v()));
                } else {
                    BatchStatement batch = BatchStatement.newInstance(DefaultBatchType.LOGGED);
                    long[] ids = new long[3];
                    for (int i = 0; i < 3; i++) {
                        double k = r.nextDouble();
                        batch = batch.add(insert.bind(nextId, k, "b" + op));
                        model.put(nextId, new Value(k, "b" + op));
                        ids[i] = nextId++;
                    }
                    writes.submit(s, quorum(batch), ids);
                }
            }
            writes.awaitAll();
            List<Row> leaves = s.execute(quorum(com.datastax.oss.driver.api.core.cql.SimpleStatement.newInstance(
                            "SELECT leaf FROM ri.needle_rx_t_k_dir WHERE part = 0")))
                    .all();
            for (int i = 0; i < 30; i++) {
                compared += compare(s, range, fromClient, clientPlans, switchedLater, model, r, "end");
            }
            System.out.println(
                    "RangeIndexIT: " + compared + " ranges answered by the index, the stock way and the planner, "
                            + model.size() + " rows, " + leaves.size() + " leaves, " + maintenance
                            + " SSTable operations and repairs, seed " + seed);
            assertTrue(leaves.size() > 4, "leaves split: " + leaves.size() + " leaves");
            checkViews(s, compared, switchedLater.sum());
            checkClientPlans(s, clientPlans);
            checkKeyLists(s);
            checkPagedAnswersAreLearned(s, range);
        } catch (AssertionError e) {
            throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
        } catch (RuntimeException e) {
            throw new IllegalStateException("seed " + seed + ": " + e.getMessage(), e);
        }
    }

    /**
     * What node 1, which coordinated every query, shows the operator: each range query counted by
     * the strategy that answered it (three per comparison: the index's, the stock way's, the
     * planner's), and the last 64 plans, the newest being the planner's of the last comparison.
     */
    private static void checkViews(CqlSession s, int compared, long switchedLater) {
        Row index = s.execute("SELECT * FROM needle_views.range_indexes WHERE keyspace_name = 'ri'")
                .one();
        assertTrue(index != null && index.getString("index_name").equals("t_k"), "range_indexes lists t_k");
        long answered = index.getLong("queries_by_index") + index.getLong("queries_by_scan");
        assertTrue(answered >= 3L * compared, answered + " queries counted for " + compared + " comparisons");
        assertEquals(0, index.getLong("queries_by_sai"), "no SAI on ri.t");
        System.out.println("RangeIndexIT: " + switchedLater + " answers switched to the scan after their first page, "
                + index.getLong("switches_to_stock") + " switches counted in all");
        assertTrue(switchedLater > 0, "some answers asked to switch had a second page");
        assertTrue(
                index.getLong("switches_to_stock") >= switchedLater,
                index.getLong("switches_to_stock") + " switches counted, " + switchedLater + " asked for");
        assertTrue(index.getInt("leaves") > 4, "leaves " + index.getInt("leaves"));
        // a quarter of the writes move a row to another value; the reads that met its old entry removed it
        assertTrue(index.getLong("stale_entries_removed") > 0, "superseded entries removed by reads");
        // a tenth of the writes delete a row; node 1 replicates every row and holds the proofs
        System.out.println("RangeIndexIT: node 1's reads removed " + index.getLong("stale_entries_removed")
                + " superseded entries and " + index.getLong("deleted_entries_removed") + " of deleted rows");
        assertTrue(index.getLong("deleted_entries_removed") > 0, "deleted rows' entries removed by reads");
        List<Row> plans = s.execute("SELECT * FROM needle_views.range_plans WHERE keyspace_name = 'ri'")
                .all();
        assertEquals(64, plans.size(), "the last 64 plans are kept");
        assertEquals(1, plans.get(0).getInt("plan"));
        assertTrue(
                List.of("planner", "exploring", "switched", "not ready")
                        .contains(plans.get(0).getString("chosen_by")),
                "the newest plan is the planner's: " + plans.get(0).getString("chosen_by"));
        Row stock = plans.get(1);
        assertEquals("scan", stock.getString("strategy"), "the stock way on a column without SAI is the scan");
        for (Row p : plans) {
            assertTrue(p.getLong("rows") >= 0 && p.getDouble("latency_ms") >= 0, "plan " + p.getInt("plan"));
        }
    }

    /**
     * Node 1 read the rows of its index answers by key lists (one range read per batch), none a
     * partition at a time: the keys here are small, and no index was dropped.
     */
    private static void checkKeyLists(CqlSession s) {
        Row index = s.execute("SELECT keys_read_by_key_list, keys_read_by_partition FROM needle_views.range_indexes"
                        + " WHERE keyspace_name = 'ri'")
                .one();
        System.out.println("RangeIndexIT: node 1 read " + index.getLong("keys_read_by_key_list")
                + " keys' rows by key lists, " + index.getLong("keys_read_by_partition") + " a partition at a time");
        assertTrue(index.getLong("keys_read_by_key_list") > 0, "rows read by key lists");
        assertEquals(0L, index.getLong("keys_read_by_partition"), "no row read a partition at a time");
    }

    /**
     * The queries planned for the client went to node 1 (the session's only coordinator): it
     * counted each client scan it left to the client, its model of the client's scan learned
     * from the client's reports, and over ranges of the three lengths both the index and the
     * client's scan were chosen.
     */
    private static void checkClientPlans(CqlSession s, Map<String, Integer> clientPlans) {
        System.out.println("RangeIndexIT: the client-planned answers' strategies: " + clientPlans);
        assertTrue(
                clientPlans.containsKey("index") && clientPlans.containsKey("client-scan"),
                "short ranges by the index and long ones by the client's scan: " + clientPlans);
        Row index = s.execute(
                        "SELECT queries_by_client_scan FROM needle_views.range_indexes WHERE keyspace_name = 'ri'")
                .one();
        assertEquals(
                (long) clientPlans.get("client-scan"),
                index.getLong("queries_by_client_scan"),
                "node 1 counted every scan it left to the client");
        // each scan is reported with the client's next query; the last one may not be
        long reported = queriesObserved(s, "model_client_scan");
        assertTrue(
                reported >= clientPlans.get("client-scan") - 1L,
                reported + " of the client's " + clientPlans.get("client-scan") + " scans reported");
    }

    /**
     * A query the index answers in many pages teaches the planner once, when its last page is
     * answered (the paging state carries the pages' rows and time): node 1's model of the index
     * counts one more observed query.
     */
    private static void checkPagedAnswersAreLearned(CqlSession s, PreparedStatement range) {
        long before = queriesObserved(s, "model_index");
        List<Row> rows = s.execute(quorum(range.bind(0.2, 0.3)).setPageSize(7).setCustomPayload(INDEX))
                .all();
        assertTrue(rows.size() > 7 * 3, rows.size() + " rows: several pages");
        assertEquals(
                before + 1,
                queriesObserved(s, "model_index"),
                "one paged index answer observed once, on its last page");
    }

    /** From node 1's range_indexes, a model's column: "25.0 ms + 0.1100 ms/row, 12 queries observed". */
    private static long queriesObserved(CqlSession s, String modelColumn) {
        String model = s.execute(
                        "SELECT " + modelColumn + " FROM needle_views.range_indexes WHERE keyspace_name = 'ri'")
                .one()
                .getString(modelColumn);
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("(\\d+) queries observed").matcher(model);
        assertTrue(m.find(), modelColumn + ": " + model);
        return Long.parseLong(m.group(1));
    }

    private static <S extends Statement<S>> S quorum(S st) {
        return st.setConsistencyLevel(ConsistencyLevel.QUORUM).setTimeout(Duration.ofSeconds(20));
    }

    /** Every node has indexed the rows it held (and had a second to learn that the others have). */
    private static void awaitBuilt(CqlSession s) throws InterruptedException {
        RangeIndexStatus.of(s, "ri", "t_k").awaitBuilt(3, Duration.ofMinutes(2));
        Thread.sleep(2_000); // every coordinator rereads the index's status each second
    }

    /**
     * One random range, answered as planned for the client ({@link RangeQuery}), by the index, the
     * stock way and the planner, each compared with the model.
     */
    private static int compare(
            CqlSession s,
            PreparedStatement range,
            RangeQuery fromClient,
            Map<String, Integer> clientPlans,
            LongAdder switchedLater,
            Model model,
            SplittableRandom r,
            String when) {
        double length = switch (r.nextInt(3)) {
            case 0 -> 0.0001 + r.nextDouble() * 0.002;
            case 1 -> 0.002 + r.nextDouble() * 0.1;
            default -> 0.1 + r.nextDouble() * 0.8;
        };
        double from = r.nextDouble() * (1 - length);
        double to = from + length;
        TreeMap<Long, Value> expected = new TreeMap<>();
        model.forEach((id, v) -> {
            if (v.k() >= from && v.k() < to) {
                expected.put(id, v);
            }
        });
        // small pages cross leaves and splits often; at most about 20 pages keep long ranges
        // affordable; one range in four at the drivers' default page size (an index page then
        // takes its entries in batches that grow from 256 to 4,096)
        int pageSize = r.nextInt(4) == 0 ? 5000 : Math.max(1 + r.nextInt(200), expected.size() / 20 + 1);
        RangeQuery.Answer planned4Client = fromClient.between(from, to);
        clientPlans.merge(planned4Client.strategy(), 1, Integer::sum);
        assertSame(
                expected,
                asMap(planned4Client.rows()),
                "the answer planned for the client (" + planned4Client.strategy() + ") vs model, range [" + from + ", "
                        + to + "), " + when);
        String what = when + ", range [" + from + ", " + to + "), page size " + pageSize;
        // before the others, so that the two newest plans stay the stock way's and the planner's;
        // short answers half the time in pages of 1 to 3 rows, where the scan's reads of a split
        // stop at the row the index's page ended at
        int switchPage = expected.size() <= 200 && r.nextBoolean() ? 1 + r.nextInt(3) : pageSize;
        List<Row> switched = s.execute(
                        quorum(range.bind(from, to)).setPageSize(switchPage).setCustomPayload(SWITCH))
                .all();
        assertSame(
                expected,
                asMap(switched),
                "the index's first page and the scan's rest vs model, " + what + " (" + switchPage + " a page)");
        if (expected.size() > switchPage) {
            switchedLater.increment(); // its second page switched (node 1 counts it)
        }
        List<Row> byIndex = s.execute(
                        quorum(range.bind(from, to)).setPageSize(pageSize).setCustomPayload(INDEX))
                .all();
        for (int i = 1; i < byIndex.size(); i++) {
            double before = byIndex.get(i - 1).getDouble("k");
            double k = byIndex.get(i).getDouble("k");
            assertTrue(
                    k >= before,
                    "the index answers in the column's order: row " + i + " has k " + k + " after "
                            + before + " (ids " + byIndex.get(i - 1).getLong("id") + ", "
                            + byIndex.get(i).getLong("id")
                            + "), " + what);
        }
        assertSame(expected, asMap(byIndex), "index answer vs model, " + what);
        List<Row> stock = s.execute(
                        quorum(range.bind(from, to)).setPageSize(pageSize).setCustomPayload(STOCK))
                .all();
        assertSame(expected, asMap(stock), "stock answer vs model, " + what);
        List<Row> planned =
                s.execute(quorum(range.bind(from, to)).setPageSize(pageSize)).all();
        assertSame(expected, asMap(planned), "the planner's answer vs model, " + what);
        return 1;
    }

    /** Fails naming only the rows that differ (the answers can be long). */
    private static void assertSame(Map<Long, Value> expected, Map<Long, Value> actual, String what) {
        if (expected.equals(actual)) {
            return;
        }
        Map<Long, String> diff = new TreeMap<>();
        expected.forEach((id, v) -> {
            if (!v.equals(actual.get(id))) {
                diff.put(id, "expected " + v + ", got " + actual.get(id));
            }
        });
        actual.forEach((id, v) -> {
            if (!expected.containsKey(id)) {
                diff.put(id, "not expected, got " + v);
            }
        });
        throw new AssertionError(what + ": " + expected.size() + " rows expected, " + actual.size() + " returned; "
                + diff.size() + " differ: " + diff);
    }

    private static TreeMap<Long, Value> asMap(List<Row> rows) {
        TreeMap<Long, Value> m = new TreeMap<>();
        for (Row row : rows) {
            Value previous = m.put(row.getLong("id"), new Value(row.getDouble("k"), row.getString("v")));
            assertEquals(null, previous, "row " + row.getLong("id") + " returned twice");
        }
        return m;
    }
}
