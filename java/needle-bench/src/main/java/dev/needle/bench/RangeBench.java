package dev.needle.bench;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.BoundStatement;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.Row;
import dev.needle.bench.RangeResult.ClientsResult;
import dev.needle.bench.RangeResult.MixResult;
import dev.needle.bench.RangeResult.Stats;
import dev.needle.bench.RangeResult.WriteResult;
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
import java.util.Comparator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import org.HdrHistogram.Histogram;

/**
 * Runs a {@link RangeExperiment}: loads its data set ({@link RangeDataSet}), answers each mix's
 * queries with every variant, in a random order per query, and checks that the variants return the
 * same rows; then the client-concurrency points and the writes ({@link RangeWrites}). Writes
 * {@code results.json}.
 */
public final class RangeBench {
    private static final String KEYSPACE = RangeDataSet.KEYSPACE;
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
    private final RangeDataSet data;
    /** What the planner chose for the last "hybrid-client" query (read by the one thread that measures mixes). */
    private volatile String lastClientPlan = "unknown";

    /** One way of answering {@code k >= from AND k < to}: a variant, on its table. */
    @FunctionalInterface
    interface Reader {
        List<Row> read(double from, double to);
    }

    /** A run of {@code e} on a started cluster of {@code e.cluster().nodes()} nodes; progress goes to {@code log}. */
    public RangeBench(RangeExperiment e, LocalCluster cluster, PrintStream log) {
        this.e = e;
        this.cluster = cluster;
        this.log = log;
        this.data = new RangeDataSet(e, cluster, log);
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
            double loadSeconds = data.load(s, cl, leaves);
            Map<String, Reader> readers = readers(s, cl);
            SplittableRandom r = new SplittableRandom(e.seed() ^ 0x5eed);
            List<MixResult> mixes = new ArrayList<>();
            List<ClientsResult> clients = new ArrayList<>();
            for (RangeExperiment.Mix m : e.mixes()) {
                mixes.add(measure(m, r, readers, s));
                ResultFiles.write(partial, result(command, started, loadSeconds, leaves, mixes, clients, List.of()));
            }
            if (e.clients() != null) {
                for (RangeExperiment.Mix m : e.mixes()) {
                    for (int threads : e.clients().threads()) {
                        clients.addAll(measureClients(m, threads, r, readers));
                    }
                    ResultFiles.write(
                            partial, result(command, started, loadSeconds, leaves, mixes, clients, List.of()));
                }
            }
            List<WriteResult> writes = RangeWrites.measure(e, data, s, r, cl, log);
            RangeResult result = result(command, started, loadSeconds, leaves, mixes, clients, writes);
            ResultFiles.write(out.resolve("results.json"), result);
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
                    for (RangeDataSet.IndexedTable t : data.indexedTables()) {
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
}
