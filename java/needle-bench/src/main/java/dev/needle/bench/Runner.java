package dev.needle.bench;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.type.codec.TypeCodecs;
import dev.needle.bench.KeySpace.DeleteMode;
import dev.needle.testkit.LocalCluster;
import java.io.IOException;
import java.io.PrintStream;
import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Runs one experiment against a cluster with the Needle plugin: creates one table per variant,
 * writes the data set ({@link DataSetWriter}), then measures every point ({@link Rounds}) and
 * writes {@code results.json} after each point ({@link PointResult}), so an interrupted run keeps
 * what it measured. Lookup experiments draw each point's keys from the key space's pools; insert
 * experiments write fresh keys at each point's load; with resource sampling, the run is framed by
 * idle periods whose cost is the baseline.
 */
public final class Runner {
    /** The keyspace every experiment writes to (dropped and re-created at the start). */
    public static final String KEYSPACE = "needle_bench";

    private final Experiment e;
    private final Experiment.Cluster shape;
    private final LocalCluster cluster;
    private final Path resultFile;
    private final PrintStream log;
    private final List<Variant> variants;
    private final KeySpace keySpace;
    private final ConsistencyLevel consistency;
    private final List<PointResult> runs = new ArrayList<>();
    private Instant started;
    private Map<String, Object> machine;
    private String cassandraVersion;
    private Instant finished;
    private final Map<String, Object> settings = new LinkedHashMap<>();
    private final Map<String, Client> clients = new LinkedHashMap<>();
    private CqlSession session;
    private BenchCluster nodes;
    private DataSetWriter writer;
    private Rounds rounds;
    /** What the nodes spend, when the experiment samples it ({@code resources}); else null. */
    private ResourceFrame resources;

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

    /** Checks, before anything starts, that the experiment's cold-cache runs can drop the page cache. */
    public static void checkCanDropCaches(Experiment e) {
        if (e.caches().contains("cold")) {
            BenchCluster.checkCanDropCaches();
        }
    }

    /** Records a setting of the run that is not in the experiment (e.g. the node's heap) in the result. */
    public Runner note(String key, Object value) {
        settings.put(key, value);
        return this;
    }

    /** Runs the experiment; returns the result document as it is written to the result file. */
    public RunResult run() throws IOException {
        started = Instant.now();
        machine = Machine.facts();
        session = cluster.session(1, e.run().coordinator().equals("token-aware"));
        nodes = new BenchCluster(cluster, session, shape.nodes(), log);
        try {
            cassandraVersion = session.execute("SELECT release_version FROM system.local")
                    .one()
                    .getString(0);
            createSchema();
            for (Variant v : variants) {
                clients.put(
                        v.name(),
                        new CassandraClient(
                                session, false, KEYSPACE, v.table(), e.dataset().rowBytes(), consistency, e.seed()));
            }
            writer = new DataSetWriter(e, List.copyOf(clients.values()), keySpace, nodes, KEYSPACE);
            if (e.resources() != null) {
                resources = new ResourceFrame(e.resources(), new Resources(cluster, shape.nodes()), log);
            }
            rounds = new Rounds(
                    e, variants, KEYSPACE, nodeFilters(), nodes, resources == null ? null : resources.resources(), log);
            if (e.isInsert()) {
                runInserts();
            } else {
                runLookups();
            }
            if (resources != null) {
                resources.idleAfter(nodes, KEYSPACE, variants, nodeFilters());
                write();
            }
            finished = Instant.now();
            write();
            return document();
        } finally {
            if (resources != null) {
                resources.close();
            }
            clients.values().forEach(Client::close);
            session.close();
        }
    }

    private void createSchema() {
        log.println("creating keyspace " + KEYSPACE + " with tables "
                + variants.stream().map(Variant::table).toList());
        nodes.ddl("DROP KEYSPACE IF EXISTS " + KEYSPACE);
        nodes.ddl("CREATE KEYSPACE " + KEYSPACE + " WITH replication = {'class': 'SimpleStrategy', "
                + "'replication_factor': " + shape.replication() + "}");
        for (Variant v : variants) {
            for (String cql : v.ddl(KEYSPACE, e.indexOptions())) {
                nodes.ddl(cql);
            }
        }
        // The token map (which node owns which key) needs the keyspace's replication.
        session.refreshSchema();
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
            writer.load(written, size);
            writer.delete(written, size);
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
            Map<String, PointResult.TableBytes> sizes = nodes.tableBytes(KEYSPACE, tables());
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

    private void measureLookups(
            int size,
            Map<String, PointResult.TableBytes> sizes,
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
        Rounds.Measured m = measure(where, cache, ops, p);
        PointResult.Lookup setting = new PointResult.Lookup(
                size,
                sizes,
                mode == null ? null : mode.name().toLowerCase(),
                p.mix(),
                p.remote(),
                shape.nodes() > 1
                        ? RequestFloor.measure(session, Math.max(200, e.run().opsPerRound()))
                        : null);
        runs.add(m.result(p, cache, setting, null));
        write();
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
                writer.load((int) next[0], target);
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
            Rounds.Measured m = measure(
                    "warm cache, " + p.label(),
                    "warm",
                    ops,
                    p,
                    () -> next[0] += e.run().opsPerRound(),
                    w -> next[0] += w);
            runs.add(m.result(p, "warm", null, new PointResult.Insert(before, p.load(), p.rate())));
            write();
        }
    }

    // ------------------------------------------------------------------ measuring

    private Rounds.Measured measure(String where, String cache, ClosedLoop.Op[] ops, Experiment.Point p)
            throws IOException {
        return measure(where, cache, ops, p, () -> {}, w -> {});
    }

    /** Measures a point ({@link Rounds#measure}), with the resource timeline ({@link ResourceFrame}) around it. */
    private Rounds.Measured measure(
            String where,
            String cache,
            ClosedLoop.Op[] ops,
            Experiment.Point p,
            Runnable afterRound,
            java.util.function.LongConsumer afterWarmup)
            throws IOException {
        if (resources != null) {
            resources.startOnce();
        }
        Rounds.Measured m = rounds.measure(where, cache, ops, p, afterRound, afterWarmup);
        if (resources != null) {
            resources.afterPoint(nodes, KEYSPACE);
        }
        return m;
    }

    /**
     * Waits until every Needle table is ready on every node and, with node filters, until node 1
     * trusts its copies of every other node's filters.
     */
    private void waitNeedleReady() throws IOException {
        List<String> needleTables =
                variants.stream().filter(Variant::needle).map(Variant::table).toList();
        nodes.waitNeedleReady(KEYSPACE, needleTables, nodeFilters() ? stalenessMillis() : null);
    }

    /** The variants' tables, by variant name. */
    private Map<String, String> tables() {
        Map<String, String> out = new LinkedHashMap<>();
        variants.forEach(v -> out.put(v.name(), v.table()));
        return out;
    }

    /** The bound S of the index options ('staleness', default 1s), in milliseconds. */
    long stalenessMillis() {
        return BenchCluster.parseStaleness(
                e.indexOptions() == null ? "1s" : e.indexOptions().getOrDefault("staleness", "1s"));
    }

    /** The result document as measured so far. */
    private RunResult document() {
        return new RunResult(
                e.name(),
                e.title(),
                e.reproduces(),
                started.toString(),
                machine,
                e.asJson(),
                settings,
                List.copyOf(runs),
                cassandraVersion,
                resources == null || !resources.started() ? null : resources.document(),
                finished == null ? null : finished.toString(),
                finished == null ? null : Duration.between(started, finished).toSeconds(),
                finished == null ? null : Machine.loadAverage());
    }

    /** A result document as its file holds it: every record turned into a map of its JSON fields. */
    @SuppressWarnings("unchecked")
    static Map<String, Object> asMap(Object document) {
        return ResultFiles.JSON.convertValue(document, Map.class);
    }

    private void write() throws IOException {
        ResultFiles.write(resultFile, document());
    }
}
