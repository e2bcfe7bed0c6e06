package dev.needle.bench;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.type.codec.TypeCodecs;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import dev.needle.bench.KeySpace.DeleteMode;
import dev.needle.testkit.LocalCluster;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Base64;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.HdrHistogram.Histogram;

/**
 * Runs one experiment against a cluster with the Needle plugin: creates one table per variant,
 * runs the load phase (and the delete, flush and compaction phases), then measures every point
 * with warm-up and interleaved rounds, and writes {@code results.json} after each point, so an
 * interrupted run keeps what it measured.
 *
 * <p>Variants are measured in rounds: each round runs every variant once, in an order that rotates
 * from round to round, so a disturbance of the shared machine falls on all variants alike.
 */
public final class Runner {
    /** The keyspace every experiment writes to (dropped and re-created at the start). */
    public static final String KEYSPACE = "needle_bench";

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    private final Experiment e;
    private final Experiment.Cluster shape;
    private final LocalCluster cluster;
    private final Path resultFile;
    private final PrintStream log;
    private final List<Variant> variants;
    private final KeySpace keySpace;
    private final ConsistencyLevel consistency;
    private final List<Map<String, Object>> runs = new ArrayList<>();
    private final Map<String, Object> result = new LinkedHashMap<>();
    private final Map<String, Object> settings = new LinkedHashMap<>();
    private final Map<String, Client> clients = new LinkedHashMap<>();
    private CqlSession session;
    /** What the nodes spend, when the experiment samples it ({@code resources}); else null. */
    private Resources resources;

    /**
     * @param cluster    a running cluster with the plugin (node 1 coordinates when the run is "fixed")
     * @param resultFile where results.json goes (its folder is created)
     * @param log        where phase messages go
     */
    public Runner(Experiment e, LocalCluster cluster, Path resultFile, PrintStream log) {
        this.e = e;
        this.shape = e.clusterOrDefault();
        this.cluster = cluster;
        this.resultFile = resultFile;
        this.log = log;
        this.variants = e.variants().stream().map(Variant::of).toList();
        this.keySpace = new KeySpace(e.seed(), e.dataset().deletedFraction(), e.deleteModes());
        this.consistency = DefaultConsistencyLevel.valueOf(e.run().consistency().toUpperCase());
    }

    /** Checks, before anything starts, that cold-cache runs can drop the page cache. */
    public static void checkCanDropCaches(Experiment e) {
        if (e.caches().contains("cold") && !Files.isWritable(Path.of("/proc/sys/vm/drop_caches"))) {
            throw new IllegalStateException("cold-cache runs drop the page cache through /proc/sys/vm/drop_caches, "
                    + "which needs root; run as root, or pass --warm-only");
        }
    }

    /** Records a setting of the run that is not in the experiment (e.g. the node's heap) in the result. */
    public Runner note(String key, Object value) {
        settings.put(key, value);
        return this;
    }

    /** Runs the experiment; returns the result document (also written to the result file). */
    public Map<String, Object> run() throws IOException {
        Instant started = Instant.now();
        result.put("name", e.name());
        result.put("title", e.title());
        result.put("reproduces", e.reproduces());
        result.put("started", started.toString());
        result.put("machine", Machine.facts());
        result.put("experiment", e.asJson());
        result.put("settings", settings);
        result.put("runs", runs);
        session = cluster.session(1, e.run().coordinator().equals("token-aware"));
        try {
            result.put(
                    "cassandra_version",
                    session.execute("SELECT release_version FROM system.local")
                            .one()
                            .getString(0));
            createSchema();
            for (Variant v : variants) {
                clients.put(
                        v.name(),
                        new CassandraClient(
                                session, false, KEYSPACE, v.table(), e.dataset().rowBytes(), consistency, e.seed()));
            }
            if (e.resources() != null) {
                resources = new Resources(cluster, shape.nodes());
            }
            if (e.isInsert()) {
                runInserts();
            } else {
                runLookups();
            }
            if (resources != null) {
                idleAfter();
            }
            result.put("finished", Instant.now().toString());
            result.put("duration_s", Duration.between(started, Instant.now()).toSeconds());
            result.put("load_average_end", Machine.loadAverage());
            write();
            return result;
        } finally {
            if (resources != null) {
                resources.close();
            }
            clients.values().forEach(Client::close);
            session.close();
        }
    }

    // ------------------------------------------------------------------ resources

    /**
     * Starts the resource timeline, once, before the first measured point: an idle period first
     * (the cluster at rest after the load phase), then every phase labelled as it runs.
     */
    private void startResources() throws IOException {
        if (resources == null || result.containsKey("resources")) {
            return;
        }
        Experiment.ResourceSampling rs = e.resources();
        Map<String, Object> doc = new LinkedHashMap<>();
        doc.put("interval_s", rs.intervalS());
        doc.put("clock", "seconds since the timeline started");
        doc.put("timeline", List.of());
        result.put("resources", doc);
        resources.phase("idle before");
        resources.startTimeline(rs.intervalS());
        doc.put("idle_before", idlePeriod("idle before", rs.idleBeforeS()));
    }

    /** An idle period of {@code seconds} under {@code label}: what it cost, per second. */
    private Map<String, Object> idlePeriod(String label, double seconds) throws IOException {
        log.printf(
                "%s: the cluster idle for %.0f s (sampling every %.1f s)%n",
                label, seconds, e.resources().intervalS());
        resources.phase(label);
        Resources.Reading a = resources.read();
        sleep(Math.round(seconds * 1000));
        return resources.totals(resources.read().minus(a), 0);
    }

    /**
     * The idle periods after the last point: with the Needle indexes (node filters publish
     * heartbeats), then after dropping them (the cluster as stock Cassandra would be).
     */
    private void idleAfter() throws IOException {
        @SuppressWarnings("unchecked")
        Map<String, Object> doc = (Map<String, Object>) result.get("resources");
        double seconds = e.resources().idleAfterS();
        // What the load left behind (memtables, compactions) is not the node filters' cost at rest.
        resources.phase("settling");
        settle(true, false);
        sleep(15_000);
        doc.put("idle_after_with_needle", idlePeriod("idle, Needle indexes", seconds));
        for (Variant v : variants) {
            if (v.needle()) {
                log.println("dropping the Needle index of " + v.table());
                ddl("DROP INDEX " + KEYSPACE + "." + v.table() + "_needle");
            }
        }
        resources.phase("settling");
        sleep(15_000); // the indexes unregister on every node
        doc.put("idle_after_indexes_dropped", idlePeriod("idle, Needle indexes dropped", seconds));
        doc.put("timeline", resources.timeline());
        write();
    }

    private void createSchema() {
        log.println("creating keyspace " + KEYSPACE + " with tables "
                + variants.stream().map(Variant::table).toList());
        ddl("DROP KEYSPACE IF EXISTS " + KEYSPACE);
        ddl("CREATE KEYSPACE " + KEYSPACE + " WITH replication = {'class': 'SimpleStrategy', "
                + "'replication_factor': " + shape.replication() + "}");
        for (Variant v : variants) {
            for (String cql : v.ddl(KEYSPACE, e.indexOptions())) {
                ddl(cql);
            }
        }
        // The token map (which node owns which key) needs the keyspace's replication.
        session.refreshSchema();
    }

    /**
     * Runs a schema change and waits until every node has it: on several nodes sharing two cores,
     * the driver's own wait (10 s) can end first, and the next statement may then reach a node
     * that does not know the table yet.
     */
    private void ddl(String cql) {
        session.execute(cql);
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (!session.checkSchemaAgreement()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the nodes do not agree on the schema 2 minutes after: " + cql
                        + " (see 'needle-cluster nodetool 1 describecluster')");
            }
            sleep(250);
        }
    }

    /** Whether the Needle variants carry node filters (index option node_filter other than off). */
    private boolean nodeFilters() {
        Map<String, String> o = e.indexOptions();
        return shape.nodes() > 1
                && o != null
                && !o.getOrDefault("node_filter", "off").equals("off");
    }

    /**
     * The keys of each pool split by owner: [0] those node 1 holds a replica of, [1] the others,
     * after the driver's token map.
     */
    private KeySpace.Pools[] byOwner(KeySpace.Pools pools) {
        TokenMap tokens = session.getMetadata()
                .getTokenMap()
                .orElseThrow(() -> new IllegalStateException("the driver has no token map of the cluster"));
        CqlIdentifier ks = CqlIdentifier.fromInternal(KEYSPACE);
        String first = cluster.address(1);
        java.util.function.LongPredicate remote =
                key -> tokens.getReplicas(ks, TypeCodecs.BIGINT.encode(key, ProtocolVersion.DEFAULT)).stream()
                        .noneMatch(n -> n.getEndPoint().resolve() instanceof InetSocketAddress a
                                && a.getAddress().getHostAddress().equals(first));
        KeySpace.Pools far = pools.only(remote);
        KeySpace.Pools near = pools.only(remote.negate());
        log.printf(
                "keys node 1 holds a replica of: %,d live, %,d deleted, %,d never written; of other nodes only: %,d, %,d, %,d%n",
                near.live().length,
                near.byPartition().length + near.byRow().length,
                near.absent().length,
                far.live().length,
                far.byPartition().length + far.byRow().length,
                far.absent().length);
        return new KeySpace.Pools[] {near, far};
    }

    // ------------------------------------------------------------------ lookups

    private void runLookups() throws IOException {
        int written = 0;
        for (int size : e.dataset().partitions()) {
            load(written, size);
            delete(written, size);
            written = size;
            waitNeedleReady();
            KeySpace.Pools pools = keySpace.pools(size);
            KeySpace.Pools[] owned = e.points().stream().anyMatch(p -> p.remote() != null) ? byOwner(pools) : null;
            log.printf(
                    "data set: %,d partitions (%,d live, %,d deleted by partition, %,d row by row), %d rows of %d bytes each%n",
                    size,
                    pools.live().length,
                    pools.byPartition().length,
                    pools.byRow().length,
                    e.dataset().rowsPerPartition(),
                    e.dataset().rowBytes());
            Map<String, Object> sizes = tableBytes();
            for (String cache : e.caches()) {
                for (String mode : e.deleteModes()) {
                    DeleteMode dm = mode.equals("none") ? null : DeleteMode.valueOf(mode.toUpperCase());
                    for (Experiment.Point p : e.points()) {
                        measureLookups(size, sizes, cache, dm, p, pools, owned);
                    }
                }
            }
        }
    }

    private void load(int from, int to) throws IOException {
        if (to <= from) {
            return;
        }
        int rows = e.dataset().rowsPerPartition();
        long total = (long) (to - from) * variants.size();
        try (Progress pr = new Progress("load", total, "partitions")) {
            ClosedLoop.run(
                    e.load().threads(),
                    total,
                    e.seed(),
                    (i, r) -> {
                        long key = from + i / variants.size();
                        clients.get(variants.get((int) (i % variants.size())).name())
                                .insert(key, 0, rows);
                        return true;
                    },
                    pr.done);
        }
        settle(e.load().flushAfterLoad(), e.load().compactAfterLoad());
    }

    private void delete(int from, int to) throws IOException {
        List<Long> keys = new ArrayList<>();
        for (long id = from; id < to; id++) {
            if (keySpace.deletedBy(id) != null) {
                keys.add(id);
            }
        }
        if (keys.isEmpty()) {
            return;
        }
        int rows = e.dataset().rowsPerPartition();
        long total = (long) keys.size() * variants.size();
        try (Progress pr = new Progress("delete", total, "partitions")) {
            ClosedLoop.run(
                    e.load().threads(),
                    total,
                    e.seed(),
                    (i, r) -> {
                        long key = keys.get((int) (i / variants.size()));
                        Client c = clients.get(
                                variants.get((int) (i % variants.size())).name());
                        if (keySpace.deletedBy(key) == DeleteMode.PARTITION) {
                            c.deletePartition(key);
                        } else {
                            c.deleteRows(key, 0, rows);
                        }
                        return true;
                    },
                    pr.done);
        }
        settle(e.load().flushAfterDelete(), e.load().compactAfterDelete());
    }

    /**
     * Flushes and compacts as asked, then waits until no compaction is pending, so every variant
     * is measured on a settled SSTable layout.
     */
    private void settle(boolean flush, boolean compact) throws IOException {
        for (int node = 1; node <= shape.nodes(); node++) {
            if (flush) {
                log.println("flushing" + onNode(node));
                cluster.flush(node, KEYSPACE);
            }
            if (compact) {
                log.println("compacting (major compaction)" + onNode(node));
                cluster.compact(node, KEYSPACE);
            }
        }
        long deadline = System.nanoTime() + Duration.ofMinutes(30).toNanos();
        for (int node = 1; node <= shape.nodes(); node++) {
            while (cluster.gauge(node, "org.apache.cassandra.metrics:type=Compaction,name=PendingTasks") > 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("compactions still pending after 30 minutes; see 'needle-cluster "
                            + "nodetool " + node + " compactionstats'");
                }
                sleep(500);
            }
        }
    }

    private String onNode(int node) {
        return shape.nodes() == 1 ? "" : " on node " + node;
    }

    private void measureLookups(
            int size,
            Map<String, Object> sizes,
            String cache,
            DeleteMode mode,
            Experiment.Point p,
            KeySpace.Pools pools,
            KeySpace.Pools[] owned)
            throws IOException {
        KeyChooser.Distribution d = KeyChooser.Distribution.of(e.run().distribution());
        // With a remote fraction f, a lookup draws from the keys of other nodes with probability f,
        // else from node 1's; the same random sequence for every variant.
        Double f = p.remote();
        KeySpace.LookupKeys near = f == null
                ? new KeySpace.LookupKeys(pools, p.mix(), mode, d)
                : f < 1 ? keysOf(owned[0], p, mode, d, "node 1's") : null;
        KeySpace.LookupKeys far = f != null && f > 0 ? keysOf(owned[1], p, mode, d, "other nodes'") : null;
        int rows = e.dataset().rowsPerPartition();
        String where =
                String.format("%s cache, %s, %s", cache, mode == null ? "no deletes" : deleteLabel(mode), p.label());
        ClosedLoop.Op[] ops = new ClosedLoop.Op[variants.size()];
        for (int v = 0; v < variants.size(); v++) {
            Client c = clients.get(variants.get(v).name());
            ops[v] = (i, r) -> {
                KeySpace.LookupKeys keys = far != null && (near == null || r.nextDouble() < f) ? far : near;
                int pool = keys.nextPool(r);
                int found = c.lookup(keys.nextKey(pool, r));
                return found == (keys.poolName(pool).equals("live") ? rows : 0);
            };
        }
        Map<String, Object> run = measure(where, cache, ops, p);
        run.put("partitions", size);
        run.put("table_bytes", sizes);
        run.put("cache", cache);
        run.put("delete_mode", mode == null ? null : mode.name().toLowerCase());
        run.put("mix", p.mix());
        run.put("remote", p.remote());
        if (shape.nodes() > 1) {
            run.put("request_floor", requestFloor());
        }
        runs.add(run);
        write();
    }

    /** The request floor after a point: its statistics without the histogram. */
    private Map<String, Object> requestFloor() {
        long t = System.nanoTime();
        Histogram h = requestFloor(session, Math.max(200, e.run().opsPerRound()));
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("query", FLOOR_QUERY);
        s.putAll(stats(h, System.nanoTime() - t));
        s.remove("hdr_histogram_ns");
        return s;
    }

    /**
     * A request the coordinator answers from memory alone, with no table behind it: one row of a
     * virtual table. ({@code system.local} is a real table; reading it costs about a millisecond,
     * more than a skipped lookup.)
     */
    static final String FLOOR_QUERY =
            "SELECT keyspace_name FROM system_virtual_schema.keyspaces WHERE keyspace_name = 'system'";

    /**
     * Latencies of {@code n} executions of {@link #FLOOR_QUERY} through {@code session}: no lookup
     * the coordinator answers without reading can be faster.
     */
    static Histogram requestFloor(CqlSession session, int n) {
        var local = session.prepare(FLOOR_QUERY);
        Histogram h = ClosedLoop.newHistogram();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            session.execute(local.bind());
            h.recordValue(System.nanoTime() - t0);
        }
        return h;
    }

    private static KeySpace.LookupKeys keysOf(
            KeySpace.Pools pools, Experiment.Point p, DeleteMode mode, KeyChooser.Distribution d, String whose) {
        try {
            return new KeySpace.LookupKeys(pools, p.mix(), mode, d);
        } catch (IllegalArgumentException ex) {
            throw new IllegalArgumentException(
                    "point '" + p.label() + "' draws " + whose + " keys: " + ex.getMessage());
        }
    }

    private static String deleteLabel(DeleteMode mode) {
        return mode == DeleteMode.PARTITION ? "partition deletes" : "row-by-row deletes";
    }

    // ------------------------------------------------------------------ inserts

    private void runInserts() throws IOException {
        int capacity = e.dataset().partitions().get(e.dataset().partitions().size() - 1);
        int rows = e.dataset().rowsPerPartition();
        long[] next = {0};
        for (Experiment.Point p : e.points()) {
            int target = (int) Math.round(p.load() * capacity);
            if (target > next[0]) {
                load((int) next[0], target);
                next[0] = target;
            }
            waitNeedleReady();
            long before = next[0];
            ClosedLoop.Op[] ops = new ClosedLoop.Op[variants.size()];
            for (int v = 0; v < variants.size(); v++) {
                Client c = clients.get(variants.get(v).name());
                // Every variant inserts the same new keys: the round's base key plus the op's index.
                ops[v] = (i, r) -> {
                    c.insert(next[0] + i, 0, rows);
                    return true;
                };
            }
            Map<String, Object> run = measure(
                    "warm cache, " + p.label(),
                    "warm",
                    ops,
                    p,
                    () -> next[0] += e.run().opsPerRound(),
                    w -> next[0] += w);
            run.put("partitions_before_warmup", before);
            run.put("load", p.load());
            run.put("rate", p.rate());
            run.put("cache", "warm");
            runs.add(run);
            write();
        }
    }

    // ------------------------------------------------------------------ measuring

    private Map<String, Object> measure(String where, String cache, ClosedLoop.Op[] ops, Experiment.Point p)
            throws IOException {
        return measure(where, cache, ops, p, () -> {}, w -> {});
    }

    /**
     * Warm-up, then {@code rounds} rounds of every variant in rotating order; {@code afterWarmup}
     * (given the warm-up's operation count) and {@code afterRound} let inserts move to fresh keys.
     * Returns the run's result entry.
     */
    private Map<String, Object> measure(
            String where,
            String cache,
            ClosedLoop.Op[] ops,
            Experiment.Point p,
            Runnable afterRound,
            java.util.function.LongConsumer afterWarmup)
            throws IOException {
        Experiment.Run r = e.run();
        int n = variants.size();
        long warmup = (long) Math.ceil(r.warmupFraction() * r.opsPerRound() * r.rounds());
        long total = (warmup + (long) r.opsPerRound() * r.rounds()) * n;
        Histogram[] hist = new Histogram[n];
        long[] wrong = new long[n];
        long[] nanos = new long[n];
        long[][] needleBefore = new long[n][];
        long seed = KeyChooser.mix64(e.seed() ^ where.hashCode());
        Resources.Reading[] used = new Resources.Reading[n];
        Map<String, long[]> syncBefore = null;
        startResources();
        try (Progress pr = new Progress(where, total, e.isInsert() ? "inserts" : "lookups")) {
            if (resources != null) {
                resources.phase("warm-up");
            }
            if (warmup > 0) {
                for (int v = 0; v < n; v++) {
                    ClosedLoop.run(r.threads(), warmup, seed - 1, ops[v], pr.done, p.rate());
                }
                // Inserts warm up on keys of their own: the measured ones must be new.
                afterWarmup.accept(warmup);
            }
            for (int v = 0; v < n; v++) {
                hist[v] = ClosedLoop.newHistogram();
                needleBefore[v] = needleCounters(variants.get(v));
            }
            if (nodeFilters()) {
                syncBefore = syncCounters();
            }
            for (int round = 0; round < r.rounds(); round++) {
                for (int k = 0; k < n; k++) {
                    int v = (round + k) % n;
                    if (cache.equals("cold")) {
                        dropCaches();
                    }
                    Resources.Reading before = null;
                    if (resources != null) {
                        resources.phase(variants.get(v).name());
                        before = resources.read();
                    }
                    ClosedLoop.Outcome o =
                            ClosedLoop.run(r.threads(), r.opsPerRound(), seed + round, ops[v], pr.done, p.rate());
                    if (resources != null) {
                        used[v] = resources.read().minus(before).plus(used[v]);
                    }
                    hist[v].add(o.histogram());
                    wrong[v] += o.wrong();
                    nanos[v] += o.nanos();
                }
                afterRound.run();
            }
        }
        Map<String, Object> run = new LinkedHashMap<>();
        run.put("point", p.label());
        run.put("x", p.x());
        run.put("warmup_ops_per_variant", warmup);
        Map<String, Object> byVariant = new LinkedHashMap<>();
        for (int v = 0; v < n; v++) {
            Map<String, Object> s = stats(hist[v], nanos[v]);
            s.put("wrong_results", wrong[v]);
            if (used[v] != null) {
                s.put("resources", resources.totals(used[v], hist[v].getTotalCount()));
            }
            long[] after = needleCounters(variants.get(v));
            if (after != null) {
                s.put("needle_skipped", after[0] - needleBefore[v][0]);
                s.put("needle_passed", after[1] - needleBefore[v][1]);
                if (nodeFilters()) {
                    s.put("needle_node_skipped", after[2] - needleBefore[v][2]);
                    s.put("needle_node_passed_live", after[3] - needleBefore[v][3]);
                    s.put("needle_node_passed_stale", after[4] - needleBefore[v][4]);
                }
            }
            byVariant.put(variants.get(v).name(), s);
            if (wrong[v] > 0) {
                log.printf(
                        "WRONG RESULTS: %s returned wrong row counts for %,d operations at %s%n",
                        variants.get(v).name(), wrong[v], where);
            }
        }
        if (syncBefore != null) {
            Map<String, long[]> syncAfter = syncCounters();
            for (Variant v : variants) {
                if (v.needle()) {
                    long[] a = syncBefore.get(v.name()), b = syncAfter.get(v.name());
                    Map<String, Object> sync = new LinkedHashMap<>();
                    for (int i = 0; i < SYNC_METRICS.size(); i++) {
                        sync.put(SYNC_FIELDS.get(i), b[i] - a[i]);
                    }
                    @SuppressWarnings("unchecked")
                    Map<String, Object> s = (Map<String, Object>) byVariant.get(v.name());
                    s.put("node_filter_sync", sync);
                }
            }
        }
        run.put("variants", byVariant);
        addRatios(run, byVariant);
        if (resources != null) {
            resources.phase("between points");
            @SuppressWarnings("unchecked")
            Map<String, Object> doc = (Map<String, Object>) result.get("resources");
            doc.put("timeline", resources.timeline());
        }
        log.println(Report.line(where, byVariant));
        return run;
    }

    /** stock / needle-cuckoo (and stock / needle-bloom) for the median, p99 and mean. */
    static void addRatios(Map<String, Object> run, Map<String, Object> byVariant) {
        @SuppressWarnings("unchecked")
        Map<String, Object> stock = (Map<String, Object>) byVariant.get("stock");
        if (stock == null) {
            return;
        }
        for (String other : List.of("needle-cuckoo", "needle-bloom")) {
            @SuppressWarnings("unchecked")
            Map<String, Object> o = (Map<String, Object>) byVariant.get(other);
            if (o == null) {
                continue;
            }
            String suffix = other.equals("needle-cuckoo") ? "cuckoo" : "bloom";
            for (String q : List.of("p50", "p99", "mean")) {
                double a = ((Number) stock.get(q + "_us")).doubleValue();
                double b = ((Number) o.get(q + "_us")).doubleValue();
                run.put("ratio_" + q + "_stock_over_" + suffix, b > 0 ? Math.round(a / b * 1000) / 1000.0 : null);
            }
        }
    }

    /** Latency statistics in microseconds, throughput, and the histogram itself (compressed, base64). */
    static Map<String, Object> stats(Histogram h, long nanos) {
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("count", h.getTotalCount());
        s.put("mean_us", us(h.getMean()));
        s.put("min_us", us(h.getMinValue()));
        s.put("p50_us", us(h.getValueAtPercentile(50)));
        s.put("p95_us", us(h.getValueAtPercentile(95)));
        s.put("p99_us", us(h.getValueAtPercentile(99)));
        s.put("max_us", us(h.getMaxValue()));
        s.put("throughput_ops_s", nanos > 0 ? Math.round(h.getTotalCount() / (nanos / 1e9) * 10) / 10.0 : null);
        ByteBuffer buf = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
        int len = h.encodeIntoCompressedByteBuffer(buf);
        s.put("hdr_histogram_ns", Base64.getEncoder().encodeToString(java.util.Arrays.copyOf(buf.array(), len)));
        return s;
    }

    private static double us(double nanos) {
        return Math.round(nanos / 100.0) / 10.0;
    }

    /** What the owners published, summed over every node (Needle's gauges), and its names in results.json. */
    private static final List<String> SYNC_METRICS = List.of(
            "NodeFilterChangesSent", "NodeFilterBatchBytesSent", "NodeFilterBytesSent", "NodeFilterSnapshotsSent");

    private static final List<String> SYNC_FIELDS =
            List.of("changes_sent", "batch_bytes_sent", "bytes_sent", "snapshots_sent");

    /** {@link #SYNC_METRICS} of every Needle table, summed over the nodes, by variant. */
    private Map<String, long[]> syncCounters() throws IOException {
        Map<String, long[]> out = new LinkedHashMap<>();
        for (Variant v : variants) {
            if (v.needle()) {
                long[] sum = new long[SYNC_METRICS.size()];
                for (int node = 1; node <= shape.nodes(); node++) {
                    for (int i = 0; i < sum.length; i++) {
                        sum[i] += cluster.metric(node, KEYSPACE, v.table(), SYNC_METRICS.get(i));
                    }
                }
                out.put(v.name(), sum);
            }
        }
        return out;
    }

    /**
     * The coordinators' {LookupsSkipped, LookupsPassed} of a Needle table and, with node filters,
     * {NodeSkipsOne + NodeSkipsQuorum, NodePassedLive, NodePassedStale}: node 1's, or the sums over
     * every node when the driver routes each request to a replica of its key; null for stock.
     */
    private long[] needleCounters(Variant v) throws IOException {
        if (!v.needle()) {
            return null;
        }
        List<String> names = new ArrayList<>(List.of("LookupsSkipped", "LookupsPassed"));
        if (nodeFilters()) {
            names.addAll(List.of("NodeSkipsOne", "NodePassedLive", "NodePassedStale", "NodeSkipsQuorum"));
        }
        int coordinators = e.run().coordinator().equals("token-aware") ? shape.nodes() : 1;
        long[] out = new long[names.size()];
        for (int node = 1; node <= coordinators; node++) {
            for (int i = 0; i < out.length; i++) {
                out[i] += cluster.metric(node, KEYSPACE, v.table(), names.get(i));
            }
        }
        if (nodeFilters()) {
            out[2] += out[5]; // a skip is a skip, at ONE or at QUORUM
        }
        return out;
    }

    /**
     * Waits until every Needle table knows all its sources on every node (nothing is skipped
     * before) and, with node filters, until node 1 trusts its copies of every other node's filters
     * and they hold every change of the phases before.
     */
    private void waitNeedleReady() throws IOException {
        long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
        for (int node = 1; node <= shape.nodes(); node++) {
            for (Variant v : variants) {
                while (v.needle() && cluster.metric(node, KEYSPACE, v.table(), "Ready") != 1) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("the Needle index on " + v.table() + onNode(node)
                                + " is not ready after 10 minutes; see the node's log (needle-cluster logs " + node
                                + ")");
                    }
                    sleep(200);
                }
            }
        }
        if (nodeFilters()) {
            waitTrustedCopies(deadline);
        }
    }

    /**
     * Waits S plus a second and a half (a copy trusted after that holds every change made before
     * the wait, and node 1's own writes are no longer exempt from skipping), then until node 1
     * trusts a copy of every other node's filter of every Needle table.
     */
    private void waitTrustedCopies(long deadline) {
        sleep(stalenessMillis() + 1500);
        for (Variant v : variants) {
            if (v.needle()) {
                awaitTrustedCopies(session, KEYSPACE, v.table(), shape.nodes(), deadline);
            }
        }
    }

    /**
     * Waits until the node {@code session} talks to trusts a copy of every other node's filter of
     * {@code keyspace.table} ({@code needle_views.node_filters}); past {@code deadline} (a
     * {@link System#nanoTime()}) throws with the copies' states.
     */
    static void awaitTrustedCopies(CqlSession session, String keyspace, String table, int nodes, long deadline) {
        while (true) {
            List<String> states = new ArrayList<>();
            int trusted = 0;
            for (var r : session.execute(
                    "SELECT owner, role, trusted, state FROM needle_views.node_filters WHERE keyspace_name = ? AND table_name = ?",
                    keyspace,
                    table)) {
                states.add(r.getFormattedContents());
                if ("copy".equals(r.getString("role")) && r.getBoolean("trusted")) {
                    trusted++;
                }
            }
            if (trusted == nodes - 1) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("a node does not trust copies of every other node's filter of "
                        + keyspace + "." + table + " after 10 minutes: " + states);
            }
            sleep(200);
        }
    }

    /** The bound S of the index options ('staleness', default 1s), in milliseconds. */
    long stalenessMillis() {
        return parseStaleness(e.indexOptions() == null ? "1s" : e.indexOptions().getOrDefault("staleness", "1s"));
    }

    /** A staleness bound as the index takes it (e.g. 500ms, 2s), in milliseconds. */
    static long parseStaleness(String option) {
        String s = option.trim();
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s)").matcher(s);
        if (!m.matches()) {
            throw new IllegalArgumentException("index option staleness '" + s + "' is not like 500ms or 2s");
        }
        return Math.round(Double.parseDouble(m.group(1)) * (m.group(2).equals("s") ? 1000 : 1));
    }

    /** Drops the kernel's page cache and Cassandra's key cache: the next reads go to the disk. */
    private void dropCaches() throws IOException {
        try {
            new ProcessBuilder("sync").inheritIO().start().waitFor();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException(ex);
        }
        Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3\n", StandardOpenOption.WRITE);
        for (int node = 1; node <= shape.nodes(); node++) {
            cluster.invalidateKeyCache(node);
        }
    }

    /** Bytes on disk per table: SSTables ("data"), Needle's saved filters ("needle", an SSTable component); SSTable count. */
    private Map<String, Object> tableBytes() throws IOException {
        Map<String, Object> out = new LinkedHashMap<>();
        for (Variant v : variants) {
            long data = 0, needle = 0;
            String marker = "/" + KEYSPACE + "/" + v.table() + "-";
            try (Stream<Path> files = Files.walk(cluster.dir())) {
                for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                    String s = "/" + cluster.dir().relativize(f);
                    if (s.contains(marker)) {
                        long len = Files.size(f);
                        if (f.getFileName()
                                .toString()
                                .contains("-Needle+")) { // the filters saved as SSTable components
                            needle += len;
                        } else {
                            data += len;
                        }
                    }
                }
            }
            long sstables = 0;
            for (int node = 1; node <= shape.nodes(); node++) {
                sstables += cluster.gauge(
                        node,
                        "org.apache.cassandra.metrics:type=Table,keyspace=" + KEYSPACE + ",scope=" + v.table()
                                + ",name=LiveSSTableCount");
            }
            out.put(v.name(), Map.of("data", data, "needle", needle, "sstables", sstables));
        }
        return out;
    }

    private void write() throws IOException {
        ResultFiles.write(JSON, resultFile, result);
    }

    private static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", ex);
        }
    }
}
