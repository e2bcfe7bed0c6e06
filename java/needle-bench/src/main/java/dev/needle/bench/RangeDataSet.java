package dev.needle.bench;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.needle.range.RangeIndexStatus;
import dev.needle.testkit.LocalCluster;
import java.io.IOException;
import java.io.PrintStream;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The data of a {@link RangeExperiment}: the dissertation's rows (an id, a key {@code k} in [0, 1)
 * and text columns) written alike into every table the variants read, one without index (the
 * scan's), one with Cassandra's SAI on {@code k}, and those with Needle's ordered index on it.
 */
final class RangeDataSet {
    /** The keyspace of the range experiments (created by {@link #load}). */
    static final String KEYSPACE = "rq";

    private final RangeExperiment e;
    private final LocalCluster cluster;
    private final PrintStream log;

    /** A table with Needle's ordered index: the one of the variants through Needle, or one per leaf size. */
    record IndexedTable(String table, String index, Integer leafSize, boolean withSai) {
        /** What the variants measured on it are named after, behind the variant: nothing on the default table. */
        String suffix() {
            return leafSize == null ? "" : " (leaf " + leafSize + ")";
        }

        /** The index, as the write results name it. */
        String description() {
            return "needle ordered index (rix)" + (leafSize == null ? "" : ", leaf " + leafSize)
                    + (withSai ? " and sai" : "");
        }
    }

    RangeDataSet(RangeExperiment e, LocalCluster cluster, PrintStream log) {
        this.e = e;
        this.cluster = cluster;
        this.log = log;
    }

    /**
     * Creates the tables and writes every row to all of them in one mutation, waits for the leaves
     * of Needle's indexes to settle (their counts go to {@code leaves}, by table) and flushes;
     * returns the seconds the writes took.
     */
    double load(CqlSession s, ConsistencyLevel cl, Map<String, Integer> leaves) throws IOException {
        s.execute(SimpleStatement.newInstance("CREATE KEYSPACE " + KEYSPACE
                        + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': "
                        + e.cluster().replicationFactor() + "}")
                .setTimeout(Duration.ofSeconds(60)));
        StringBuilder cols = new StringBuilder();
        for (int c = 1; c <= e.columns(); c++) {
            cols.append(", f").append(c).append(" text");
        }
        List<String> tables = tables();
        for (String t : tables) {
            s.execute(SimpleStatement.newInstance(
                            "CREATE TABLE " + KEYSPACE + "." + t + " (id bigint PRIMARY KEY, k double" + cols + ")")
                    .setTimeout(Duration.ofSeconds(60)));
        }
        if (tables.contains("data_sai")) {
            s.execute(
                    SimpleStatement.newInstance("CREATE INDEX data_sai_k ON " + KEYSPACE + ".data_sai (k) USING 'sai'")
                            .setTimeout(Duration.ofSeconds(60)));
        }
        for (IndexedTable t : indexedTables()) {
            s.execute(SimpleStatement.newInstance("CREATE CUSTOM INDEX " + t.index() + " ON " + KEYSPACE + "."
                            + t.table() + " (k) USING 'dev.needle.cassandra.NeedleRangeIndex'"
                            + (t.leafSize() == null ? "" : " WITH OPTIONS = {'leaf_size': '" + t.leafSize() + "'}"))
                    .setTimeout(Duration.ofSeconds(60)));
            awaitRangeIndexBuilt(s, t);
            if (t.withSai()) { // the planner then weighs SAI too
                s.execute(SimpleStatement.newInstance("CREATE INDEX " + t.table() + "_sai_k ON " + KEYSPACE + "."
                                + t.table() + " (k) USING 'sai'")
                        .setTimeout(Duration.ofSeconds(60)));
            }
        }
        List<PreparedStatement> inserts = new ArrayList<>();
        for (String t : tables) {
            inserts.add(s.prepare(insertCql(t)));
        }
        SplittableRandom r = new SplittableRandom(e.seed());
        ZipfKeys keys = e.keys();
        Semaphore inFlight = new Semaphore(e.loadThreads());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long t0 = System.nanoTime();
        long lastReport = t0;
        log.printf("loading %,d rows into %d tables (%s)%n", e.rows(), tables.size(), tables);
        for (long id = 0; id < e.rows(); id++) {
            Object[] values = row(r, id, keys.next(r));
            inFlight.acquireUninterruptibly();
            if (failure.get() != null) {
                throw new IOException(
                        "a write failed while loading: " + failure.get().getMessage(), failure.get());
            }
            BatchStatement batch = BatchStatement.newInstance(DefaultBatchType.UNLOGGED);
            for (PreparedStatement p : inserts) {
                batch = batch.add(p.bind(values));
            }
            CompletionStage<?> done =
                    s.executeAsync(batch.setConsistencyLevel(cl).setTimeout(Duration.ofSeconds(60)));
            done.whenComplete((ok, err) -> {
                if (err != null) {
                    failure.compareAndSet(null, err);
                }
                inFlight.release();
            });
            if (System.nanoTime() - lastReport > 30e9) {
                lastReport = System.nanoTime();
                log.printf("  %,d of %,d rows in %.0f s%n", id, e.rows(), (lastReport - t0) / 1e9);
            }
        }
        inFlight.acquireUninterruptibly(e.loadThreads());
        if (failure.get() != null) {
            throw new IOException(
                    "a write failed while loading: " + failure.get().getMessage(), failure.get());
        }
        double seconds = (System.nanoTime() - t0) / 1e9;
        log.printf("loaded in %.1f s; flushing%n", seconds);
        for (IndexedTable t : indexedTables()) {
            leaves.put(t.table(), awaitLeavesSettled(s, t));
        }
        for (int n = 1; n <= e.cluster().nodes(); n++) {
            cluster.flush(n, KEYSPACE);
        }
        return seconds;
    }

    /**
     * The tables the variants read: without index (the scan's), with SAI (unless SAI is on the
     * table with Needle's index, where "sai" then reads), with Needle's index.
     */
    List<String> tables() {
        List<String> tables = new ArrayList<>(List.of("data"));
        if (e.variants().contains("sai") && !e.hasSaiBesideIndex()) {
            tables.add("data_sai");
        }
        indexedTables().forEach(t -> tables.add(t.table()));
        return tables;
    }

    /** The tables with Needle's index: one at the default leaf size, or one per leaf size of the experiment. */
    List<IndexedTable> indexedTables() {
        if (!e.usesRangeIndex()) {
            return List.of();
        }
        if (e.leafSizes() == null) {
            return List.of(new IndexedTable("data_rix", "data_rix_k", null, e.hasSaiBesideIndex()));
        }
        return e.leafSizes().stream()
                .map(l -> new IndexedTable("data_rix_" + l, "data_rix_" + l + "_k", l, false))
                .toList();
    }

    /** The index that {@code table} carries, as the write results name it: "none", "sai" or Needle's. */
    String indexOf(String table) {
        return table.equals("data")
                ? "none"
                : table.equals("data_sai")
                        ? "sai"
                        : indexedTables().stream()
                                .filter(x -> x.table().equals(table))
                                .findFirst()
                                .orElseThrow()
                                .description();
    }

    /** The statement that writes a whole row into {@code table}: the values of {@link #row}. */
    String insertCql(String table) {
        StringBuilder names = new StringBuilder();
        StringBuilder marks = new StringBuilder();
        for (int c = 1; c <= e.columns(); c++) {
            names.append(", f").append(c);
            marks.append(", ?");
        }
        return "INSERT INTO " + KEYSPACE + "." + table + " (id, k" + names + ") VALUES (?, ?" + marks + ")";
    }

    /** A whole row: {@code id}, {@code k}, and each text column of 1 to the experiment's value bytes. */
    Object[] row(SplittableRandom r, long id, double k) {
        Object[] values = new Object[2 + e.columns()];
        values[0] = id;
        values[1] = k;
        for (int c = 0; c < e.columns(); c++) {
            values[2 + c] = text(r, 1 + r.nextInt(e.valueBytes()));
        }
        return values;
    }

    /** Waits until every node has indexed the (empty) table's rows: then every write writes entries. */
    private void awaitRangeIndexBuilt(CqlSession s, IndexedTable t) throws IOException {
        try {
            RangeIndexStatus.of(s, KEYSPACE, t.index()).awaitBuilt(e.cluster().nodes(), Duration.ofMinutes(3));
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", ex);
        } catch (IllegalStateException ex) {
            throw new IOException(ex.getMessage(), ex);
        }
    }

    /**
     * Waits until the index's leaves have stopped splitting (the load fills them faster than they
     * split); returns how many there are.
     */
    private int awaitLeavesSettled(CqlSession s, IndexedTable t) throws IOException {
        try {
            int leaves = RangeIndexStatus.of(s, KEYSPACE, t.index())
                    .awaitLeavesSettled(Duration.ofSeconds(10), Duration.ofMinutes(20));
            log.printf("Needle's range index %s: %d leaves%n", t.index(), leaves);
            return leaves;
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException("interrupted", ex);
        } catch (IllegalStateException ex) {
            throw new IOException(ex.getMessage(), ex);
        }
    }

    private static String text(SplittableRandom r, int length) {
        char[] c = new char[length];
        for (int i = 0; i < length; i++) {
            c[i] = (char) ('a' + r.nextInt(26));
        }
        return new String(c);
    }
}
