package dev.needle.bench;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.DefaultBatchType;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.needle.bench.RangeResult.ClientsResult;
import dev.needle.bench.RangeResult.MixResult;
import dev.needle.bench.RangeResult.Stats;
import dev.needle.bench.RangeResult.WriteResult;
import dev.needle.range.RangeIndexStatus;
import dev.needle.range.RangeQuery;
import dev.needle.range.TokenRangeScan;
import dev.needle.testkit.LocalCluster;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Random;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.CompletionStage;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.Semaphore;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.concurrent.atomic.AtomicReference;
import org.HdrHistogram.Histogram;

/**
 * Runs a {@link RangeExperiment}: loads the rows into tables of the same data, one without index
 * (so that the scan's filtered reads cannot use one), one with Cassandra's SAI on the key column,
 * and (for the variants through Needle) one with Needle's ordered index on it, then answers each mix's queries with every variant, in a random order per query,
 * and checks that the variants return the same rows. Writes {@code results.json}.
 */
public final class RangeBench {
    private static final ObjectMapper JSON = new ObjectMapper()
            .setPropertyNamingStrategy(PropertyNamingStrategies.SNAKE_CASE)
            .enable(SerializationFeature.INDENT_OUTPUT);
    private static final String KEYSPACE = "rq";
    /** The custom payload that makes Needle answer a range query from its index, whatever its planner says. */
    private static final Map<String, ByteBuffer> INDEX = strategy("index");
    /** The custom payload that makes Needle answer a range query from its parallel scan (even beside SAI). */
    private static final Map<String, ByteBuffer> SCAN = strategy("scan");
    /** The way Cassandra itself answers: SAI on a column that has it. */
    private static final Map<String, ByteBuffer> STOCK = strategy("stock");

    private static Map<String, ByteBuffer> strategy(String name) {
        return Map.of("needle.range", ByteBuffer.wrap(name.getBytes(StandardCharsets.UTF_8)));
    }

    private final RangeExperiment e;
    private final LocalCluster cluster;
    private final PrintStream log;
    /** What the planner chose for the last "hybrid-client" query (read by the one thread that measures mixes). */
    private volatile String lastClientPlan = "unknown";

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

    /** One way of answering {@code k >= from AND k < to}: a variant, on its table. */
    @FunctionalInterface
    interface Reader {
        List<Row> read(double from, double to);
    }

    /** Inserts and updates measured per table. */
    static final int WRITE_PROBES = 400;

    static final String USAGE = """
            usage: needle-bench range EXPERIMENT.json [options]   (a range-query experiment, docs/harness.md)
              --out DIR            where results.json goes (default bench/results/<name>)
              --plugin-jar JAR     the Needle plugin (default java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar)
              --cluster-tool PATH  deploy/needle-cluster (default: deploy/needle-cluster)
              --heap SIZE          each node's heap (default 1G)
              --scale F            multiply the rows by F (quick runs)
            """;

    /** {@code needle-bench range ...}: 0 done, 1 the run failed or the variants disagreed, 2 bad command line. */
    static int run(String[] args) {
        RangeExperiment e;
        Path out = null;
        Path jar = Path.of("java/needle-cassandra/target/needle-cassandra-0.1.0-SNAPSHOT.jar");
        Path tool = Path.of("deploy/needle-cluster");
        String heap = "1G";
        try {
            if (args.length < 2 || args[1].startsWith("-")) {
                throw new IllegalArgumentException("name an experiment file");
            }
            double scale = 1;
            for (int i = 2; i < args.length; i++) {
                String a = args[i];
                String v = i + 1 < args.length ? args[++i] : null;
                if (v == null) {
                    throw new IllegalArgumentException(a + " needs a value");
                }
                switch (a) {
                    case "--out" -> out = Path.of(v);
                    case "--plugin-jar" -> jar = Path.of(v);
                    case "--cluster-tool" -> tool = Path.of(v);
                    case "--heap" -> heap = v;
                    case "--scale" -> scale = Double.parseDouble(v);
                    default -> throw new IllegalArgumentException("unknown option " + a);
                }
            }
            e = RangeExperiment.read(Path.of(args[1]));
            if (scale != 1) {
                e = e.scaled(scale);
            }
            Main.requireClusterFiles(tool, jar);
            if (out == null) {
                out = Path.of("bench/results", e.name());
            }
        } catch (IllegalArgumentException ex) {
            System.err.println("needle-bench: " + ex.getMessage());
            System.err.print(USAGE);
            return 2;
        }
        System.err.printf(
                "needle-bench: %s (%s)%nstarting %d Cassandra nodes%n",
                e.name(), e.title(), e.cluster().nodes());
        List<String> up = new ArrayList<>(List.of("--heap", heap));
        up.addAll(e.cluster().yamlArgs());
        try (LocalCluster c = LocalCluster.start(
                tool,
                jar,
                Files.createTempDirectory("needle-range"),
                e.cluster().nodes(),
                up.toArray(new String[0]))) {
            RangeResult r = new RangeBench(e, c, System.err).run("needle-bench " + String.join(" ", args), out);
            System.err.println("results: " + out.resolve("results.json"));
            int wrong = r.mixes().stream().mapToInt(MixResult::wrongResults).sum()
                    + r.clients().stream() // each point's count is on each of its variants: count it once
                            .filter(p -> p.variant().equals(r.clients().get(0).variant()))
                            .mapToInt(ClientsResult::wrongResults)
                            .sum();
            if (wrong > 0) {
                System.err.println("needle-bench: " + wrong + " queries were answered differently by the variants");
                return 1;
            }
            return 0;
        } catch (IOException | RuntimeException ex) {
            System.err.println("needle-bench: the range run failed: " + ex.getMessage());
            ex.printStackTrace();
            if (Files.exists(out.resolve("results.partial.json"))) {
                System.err.println("needle-bench: what was measured before: " + out.resolve("results.partial.json"));
            }
            return 1;
        }
    }

    /** A run of {@code e} on a started cluster of {@code e.cluster().nodes()} nodes; progress goes to {@code log}. */
    public RangeBench(RangeExperiment e, LocalCluster cluster, PrintStream log) {
        this.e = e;
        this.cluster = cluster;
        this.log = log;
    }

    /**
     * Loads, measures every mix, writes {@code out}/results.json; returns the result. What is
     * measured so far is in {@code out}/results.partial.json while it runs (and after a failure).
     */
    public RangeResult run(String command, Path out) throws IOException {
        String started = Instant.now().toString();
        // What is measured so far, kept where a run that fails later leaves it (not an earlier run's).
        Path partial = out.resolve("results.partial.json");
        Files.deleteIfExists(partial);
        ConsistencyLevel cl = DefaultConsistencyLevel.valueOf(e.consistency());
        try (CqlSession s = cluster.session(1)) {
            Map<String, Integer> leaves = new LinkedHashMap<>();
            double loadSeconds = load(s, cl, leaves);
            Map<String, Reader> readers = readers(s, cl);
            SplittableRandom r = new SplittableRandom(e.seed() ^ 0x5eed);
            List<MixResult> mixes = new ArrayList<>();
            List<ClientsResult> clients = new ArrayList<>();
            for (RangeExperiment.Mix m : e.mixes()) {
                mixes.add(measure(m, r, readers, s));
                ResultFiles.write(
                        JSON, partial, result(command, started, loadSeconds, leaves, mixes, clients, List.of()));
            }
            if (e.clients() != null) {
                for (RangeExperiment.Mix m : e.mixes()) {
                    for (int threads : e.clients().threads()) {
                        clients.addAll(measureClients(m, threads, r, readers));
                    }
                    ResultFiles.write(
                            JSON, partial, result(command, started, loadSeconds, leaves, mixes, clients, List.of()));
                }
            }
            List<WriteResult> writes = measureWrites(s, r, cl);
            RangeResult result = result(command, started, loadSeconds, leaves, mixes, clients, writes);
            ResultFiles.write(JSON, out.resolve("results.json"), result);
            Files.deleteIfExists(partial);
            return result;
        }
    }

    private RangeResult result(
            String command,
            String started,
            double loadSeconds,
            Map<String, Integer> leaves,
            List<MixResult> mixes,
            List<ClientsResult> clients,
            List<WriteResult> writes) {
        return new RangeResult(
                e.name(),
                e.title(),
                e.reproduces(),
                command,
                started,
                e.rows(),
                e.cluster().nodes(),
                e.cluster().replicationFactor(),
                e.consistency(),
                e.zipf() == null ? 0 : e.zipf(),
                loadSeconds,
                leaves,
                mixes,
                clients,
                writes);
    }

    /**
     * Creates the tables and writes every row to all of them in one mutation, waits for the leaves
     * of Needle's indexes to settle (their counts go to {@code leaves}, by table) and flushes;
     * returns the seconds the writes took.
     */
    private double load(CqlSession s, ConsistencyLevel cl, Map<String, Integer> leaves) throws IOException {
        s.execute(SimpleStatement.newInstance("CREATE KEYSPACE " + KEYSPACE
                        + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': "
                        + e.cluster().replicationFactor() + "}")
                .setTimeout(Duration.ofSeconds(60)));
        StringBuilder cols = new StringBuilder();
        StringBuilder names = new StringBuilder();
        StringBuilder marks = new StringBuilder();
        for (int c = 1; c <= e.columns(); c++) {
            cols.append(", f").append(c).append(" text");
            names.append(", f").append(c);
            marks.append(", ?");
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
        String insert = " (id, k" + names + ") VALUES (?, ?" + marks + ")";
        List<PreparedStatement> inserts = new ArrayList<>();
        for (String t : tables) {
            inserts.add(s.prepare("INSERT INTO " + KEYSPACE + "." + t + insert));
        }
        SplittableRandom r = new SplittableRandom(e.seed());
        ZipfKeys keys = e.keys();
        Semaphore inFlight = new Semaphore(e.loadThreads());
        AtomicReference<Throwable> failure = new AtomicReference<>();
        long t0 = System.nanoTime();
        long lastReport = t0;
        log.printf("loading %,d rows into %d tables (%s)%n", e.rows(), tables.size(), tables);
        for (long id = 0; id < e.rows(); id++) {
            Object[] values = new Object[2 + e.columns()];
            values[0] = id;
            values[1] = keys.next(r);
            for (int c = 0; c < e.columns(); c++) {
                values[2 + c] = text(r, 1 + r.nextInt(e.valueBytes()));
            }
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
    private List<String> tables() {
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

    /**
     * Every measured variant by name: "scan", "sai", and each variant through Needle on each table
     * with Needle's index ("rix", or "rix (leaf 500)" when the experiment has leaf sizes).
     */
    private Map<String, Reader> readers(CqlSession s, ConsistencyLevel cl) {
        Map<String, Reader> out = new LinkedHashMap<>();
        for (String v : e.variants()) {
            switch (v) {
                case "scan" -> out.put(v, scan(s, "data", cl)::between);
                case "sai" -> { // without SAI on it, the query is refused (it would need ALLOW FILTERING)
                    // Beside Needle's index, SAI is asked for by the payload: the planner of that
                    // table then learns SAI's cost from these queries, as the index's and the scan's.
                    boolean beside = e.hasSaiBesideIndex();
                    PreparedStatement sai = s.prepare("SELECT * FROM " + KEYSPACE + "."
                            + (beside ? "data_rix" : "data_sai") + " WHERE k >= ? AND k < ?");
                    Map<String, ByteBuffer> payload = beside ? STOCK : Map.of();
                    out.put(v, (from, to) -> ordered(s, sai.bind(from, to).setCustomPayload(payload), cl));
                }
                case "hybrid-client" -> {
                    RangeQuery planned = RangeQuery.planned(scan(s, "data_rix", cl));
                    out.put(v, (from, to) -> {
                        RangeQuery.Answer a = planned.between(from, to);
                        lastClientPlan = a.strategy();
                        return a.rows();
                    });
                }
                default -> {
                    Map<String, ByteBuffer> payload = switch (v) {
                        case "rix" -> INDEX;
                        case "coordinator-scan" -> SCAN;
                        default -> Map.of(); // "hybrid": the planner chooses
                    };
                    for (IndexedTable t : indexedTables()) {
                        PreparedStatement q =
                                s.prepare("SELECT * FROM " + KEYSPACE + "." + t.table() + " WHERE k >= ? AND k < ?");
                        out.put(
                                v + t.suffix(),
                                (from, to) -> ordered(s, q.bind(from, to).setCustomPayload(payload), cl));
                    }
                }
            }
        }
        return out;
    }

    /** The client's parallel scan of {@code table} by the key, with the experiment's scan options. */
    private TokenRangeScan scan(CqlSession s, String table, ConsistencyLevel cl) {
        return TokenRangeScan.on(s, KEYSPACE, table, "k")
                .consistency(cl)
                .splitsPerNode(e.scan().splitsPerNode())
                .concurrency(e.scan().concurrency())
                .pageSize(e.scan().pageSize())
                .timeout(Duration.ofSeconds(120))
                .build();
    }

    private List<WriteResult> measureWrites(CqlSession s, SplittableRandom r, ConsistencyLevel cl) {
        List<String> tables = tables();
        Map<String, Histogram> inserts = new LinkedHashMap<>();
        Map<String, Histogram> updates = new LinkedHashMap<>();
        Map<String, PreparedStatement> insert = new LinkedHashMap<>();
        Map<String, PreparedStatement> update = new LinkedHashMap<>();
        StringBuilder names = new StringBuilder();
        StringBuilder marks = new StringBuilder();
        for (int c = 1; c <= e.columns(); c++) {
            names.append(", f").append(c);
            marks.append(", ?");
        }
        for (String t : tables) {
            inserts.put(t, ClosedLoop.newHistogram());
            updates.put(t, ClosedLoop.newHistogram());
            insert.put(
                    t,
                    s.prepare(
                            "INSERT INTO " + KEYSPACE + "." + t + " (id, k" + names + ") VALUES (?, ?" + marks + ")"));
            update.put(t, s.prepare("UPDATE " + KEYSPACE + "." + t + " SET k = ? WHERE id = ?"));
        }
        ZipfKeys keys = e.keys();
        for (int i = 0; i < WRITE_PROBES; i++) {
            long newId = e.rows() + i;
            long oldId = r.nextLong(e.rows());
            double k = keys.next(r);
            double k2 = keys.next(r);
            Object[] row = new Object[2 + e.columns()]; // a whole row, as the load writes
            row[0] = newId;
            row[1] = k;
            for (int c = 0; c < e.columns(); c++) {
                row[2 + c] = text(r, 1 + r.nextInt(e.valueBytes()));
            }
            List<String> order = new ArrayList<>(tables);
            Collections.shuffle(order, new Random(r.nextLong()));
            for (String t : order) {
                long t0 = System.nanoTime();
                s.execute(insert.get(t).bind(row).setConsistencyLevel(cl));
                long t1 = System.nanoTime();
                s.execute(update.get(t).bind(k2, oldId).setConsistencyLevel(cl));
                long t2 = System.nanoTime();
                inserts.get(t).recordValue(t1 - t0);
                updates.get(t).recordValue(t2 - t1);
            }
        }
        List<WriteResult> out = new ArrayList<>();
        for (String t : tables) {
            String index = t.equals("data")
                    ? "none"
                    : t.equals("data_sai")
                            ? "sai"
                            : indexedTables().stream()
                                    .filter(x -> x.table().equals(t))
                                    .findFirst()
                                    .orElseThrow()
                                    .description();
            out.add(new WriteResult(t, index, WRITE_PROBES, Stats.of(inserts.get(t)), Stats.of(updates.get(t))));
            log.printf(
                    "  writes to %-9s (%s): insert median %.2f ms, update median %.2f ms%n",
                    t,
                    index,
                    out.get(out.size() - 1).insert().medianMs(),
                    out.get(out.size() - 1).update().medianMs());
        }
        return out;
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

    private MixResult measure(RangeExperiment.Mix m, SplittableRandom r, Map<String, Reader> readers, CqlSession s) {
        Map<String, Histogram> hist = new LinkedHashMap<>();
        for (String v : readers.keySet()) {
            hist.put(v, ClosedLoop.newHistogram());
        }
        long rows = 0;
        int wrong = 0;
        Map<String, Integer> chose = new TreeMap<>();
        Map<String, Integer> choseForClient = new TreeMap<>();
        int measured = m.queries(e);
        int total = e.warmupQueries() + measured;
        for (int q = 0; q < total; q++) {
            double[] range = range(m, r);
            double from = range[0];
            double to = range[1];
            Map<String, List<Long>> answers = new LinkedHashMap<>();
            for (String v : shuffled(readers.keySet(), r)) { // a random order per query: no variant always goes first
                long t0 = System.nanoTime();
                List<Row> got = readers.get(v).read(from, to);
                long nanos = System.nanoTime() - t0;
                if (q >= e.warmupQueries()) {
                    hist.get(v).recordValue(Math.min(nanos, hist.get(v).getHighestTrackableValue()));
                    if (v.equals("hybrid")) {
                        chose.merge(lastPlan(s), 1, Integer::sum);
                    } else if (v.equals("hybrid-client")) {
                        choseForClient.merge(lastClientPlan, 1, Integer::sum);
                    }
                }
                answers.put(v, got.stream().map(row -> row.getLong("id")).toList());
            }
            if (answers.values().stream().distinct().count() > 1) {
                wrong++;
                log.printf(
                        "  %s: the variants answered k in [%f, %f) differently: %s rows%n",
                        m.label(),
                        from,
                        to,
                        answers.entrySet().stream()
                                .map(a -> a.getKey() + " " + a.getValue().size())
                                .toList());
            }
            if (q >= e.warmupQueries()) {
                rows += answers.values().iterator().next().size();
            }
        }
        Map<String, Stats> stats = new LinkedHashMap<>();
        hist.forEach((v, h) -> stats.put(v, Stats.of(h)));
        MixResult result = new MixResult(
                m.label(),
                m.minLength(),
                m.maxLength(),
                measured,
                rows / (double) measured,
                stats,
                RangeResult.plannerRatios(stats, "hybrid"),
                chose,
                RangeResult.plannerRatios(stats, "hybrid-client"),
                choseForClient,
                wrong);
        log.println(RangeResult.line(result));
        return result;
    }

    /** A query of mix {@code m}: {@code {from, to}}, its length uniform in the mix's interval. */
    private static double[] range(RangeExperiment.Mix m, SplittableRandom r) {
        double length = m.minLength() + r.nextDouble() * (m.maxLength() - m.minLength());
        double from = r.nextDouble() * (1 - length);
        return new double[] {from, from + length};
    }

    private static List<String> shuffled(Collection<String> names, SplittableRandom r) {
        List<String> order = new ArrayList<>(names);
        for (int i = order.size() - 1; i > 0; i--) {
            int j = r.nextInt(i + 1);
            order.set(j, order.set(i, order.get(j)));
        }
        return order;
    }

    /**
     * The client-concurrency phase at one point: the same {@code e.clients().queries()} queries of
     * mix {@code m} answered by each variant in turn (in a random order), from {@code threads}
     * threads at once; each answer compared with the other variants' answers to the same query.
     */
    private List<ClientsResult> measureClients(
            RangeExperiment.Mix m, int threads, SplittableRandom r, Map<String, Reader> readers) {
        int n = e.clients().queries();
        double[][] queries = new double[n][];
        for (int q = 0; q < n; q++) {
            queries[q] = range(m, r);
        }
        Map<String, List<Long>[]> answers = new LinkedHashMap<>();
        Map<String, Histogram> latency = new LinkedHashMap<>();
        Map<String, Double> perSecond = new LinkedHashMap<>();
        for (String v : shuffled(readers.keySet(), r)) {
            Reader reader = readers.get(v);
            @SuppressWarnings("unchecked")
            List<Long>[] got = new List[n];
            Histogram h = ClosedLoop.newHistogram();
            AtomicInteger next = new AtomicInteger();
            ExecutorService pool = Executors.newFixedThreadPool(threads);
            List<Future<?>> running = new ArrayList<>();
            long t0 = System.nanoTime();
            for (int t = 0; t < threads; t++) {
                running.add(pool.submit(() -> {
                    for (int q = next.getAndIncrement(); q < n; q = next.getAndIncrement()) {
                        long q0 = System.nanoTime();
                        List<Row> rows = reader.read(queries[q][0], queries[q][1]);
                        long nanos = System.nanoTime() - q0;
                        synchronized (h) {
                            h.recordValue(Math.min(nanos, h.getHighestTrackableValue()));
                        }
                        got[q] = rows.stream().map(row -> row.getLong("id")).toList();
                    }
                }));
            }
            try {
                for (Future<?> f : running) {
                    f.get();
                }
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted", ex);
            } catch (ExecutionException ex) {
                throw new IllegalStateException(
                        v + " failed with " + threads + " threads: " + ex.getCause(), ex.getCause());
            } finally {
                pool.shutdownNow();
            }
            perSecond.put(v, n / ((System.nanoTime() - t0) / 1e9));
            latency.put(v, h);
            answers.put(v, got);
        }
        int wrong = 0;
        for (int q = 0; q < n; q++) {
            final int query = q;
            if (answers.values().stream().map(a -> a[query]).distinct().count() > 1) {
                wrong++;
            }
        }
        List<ClientsResult> out = new ArrayList<>();
        StringBuilder line = new StringBuilder(String.format("  %-34s %2d threads", m.label(), threads));
        for (String v : readers.keySet()) {
            out.add(new ClientsResult(m.label(), threads, v, n, perSecond.get(v), Stats.of(latency.get(v)), wrong));
            line.append(String.format(
                    "  %s %7.1f q/s median %8.1f ms",
                    v, perSecond.get(v), latency.get(v).getValueAtPercentile(50) / 1e6));
        }
        if (wrong > 0) {
            line.append("  WRONG RESULTS: ").append(wrong);
        }
        log.println(line);
        return out;
    }

    /**
     * The plan of the last range query node 1 (every query's coordinator) answered on the index's
     * table: its strategy, and why when not by the planner's model ("scan", "index (exploring)").
     */
    private static String lastPlan(CqlSession s) {
        Row plan = s.execute("SELECT strategy, chosen_by FROM needle_views.range_plans WHERE keyspace_name = '"
                        + KEYSPACE + "' AND table_name = 'data_rix' AND index_name = 'data_rix_k' AND plan = 1")
                .one();
        if (plan == null) {
            return "unknown";
        }
        String by = plan.getString("chosen_by");
        return plan.getString("strategy") + ("planner".equals(by) ? "" : " (" + by + ")");
    }

    /**
     * A CQL range query's answer (SAI's or Needle's index's), every page, in the key's order as the
     * scan's (SAI returns rows in token order; the sort is part of its measured time).
     */
    private static List<Row> ordered(CqlSession s, BoundStatement query, ConsistencyLevel cl) {
        List<Row> rows = new ArrayList<>();
        for (Row row :
                s.execute(query.setConsistencyLevel(cl).setPageSize(5_000).setTimeout(Duration.ofSeconds(120)))) {
            rows.add(row);
        }
        rows.sort(Comparator.comparingDouble(row -> row.getDouble("k")));
        return rows;
    }

    private static String text(SplittableRandom r, int length) {
        char[] c = new char[length];
        for (int i = 0; i < length; i++) {
            c[i] = (char) ('a' + r.nextInt(26));
        }
        return new String(c);
    }
}
