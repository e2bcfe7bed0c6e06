package dev.needle.bench;

import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.metadata.TokenMap;
import com.datastax.oss.driver.api.core.type.codec.TypeCodecs;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.NodeJmx;
import java.io.IOException;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code needle-bench staleness}: the window of bounded staleness and the cost of the sync, measured
 * on a local cluster with node filters (beyond the 2022 paper, which measured neither).
 *
 * <p><b>Staleness curve.</b> Each probe key is written at ONE through the node that owns it
 * (replication factor 1), and from the moment the write is acknowledged it is read at ONE, back
 * to back, through every other node in turn until each of them has returned it once. A read that
 * misses was answered from a copy that did not hold the key yet. The run records the fraction of
 * reads that miss against the time since the acknowledgement, and per key the time until every
 * coordinator returned it; at idle, and again while loader threads insert new partitions into the
 * Needle table through their owners. The same probe on a stock table, key by key in turn with the
 * Needle table's, is the control: it never misses.
 * A read that began more than S after the acknowledgement and missed breaks invariant 5 (b).
 *
 * <p><b>Sync cost.</b> Bytes sent between nodes ({@code system_views.internode_outbound}) while
 * new partitions are inserted through their owners (no replication traffic at RF 1), less the
 * rate of an idle period just before, per changed key and receiving node; at full load and at a
 * paced rate (smaller batches). Writes {@code staleness.json}, after each phase.
 */
final class StalenessProbe {
    static final String KEYSPACE = "needle_probe";
    static final Variant STOCK = Variant.of("stock");
    static final Variant NEEDLE = Variant.of("needle-cuckoo");
    /** The node-filter decisions counted on every coordinator: skipped, passed for a live key, passed for a stale copy. */
    private static final List<String> DECISIONS = List.of("NodeSkipsOne", "NodePassedLive", "NodePassedStale");

    private StalenessProbe() {}

    static int run(String[] args) {
        if (Arrays.asList(args).contains("--help") || Arrays.asList(args).contains("-h")) {
            System.out.print(StalenessOptions.USAGE);
            return 0;
        }
        StalenessOptions o;
        try {
            o = StalenessOptions.parse(args);
            Main.requireClusterFiles(o.tool(), o.jar());
        } catch (IllegalArgumentException e) {
            System.err.println("needle-bench: " + e.getMessage());
            System.err.print(StalenessOptions.USAGE);
            return 2;
        }
        System.err.printf("staleness: starting %d nodes, emulated latency %s%n", o.nodes(), o.latency());
        StalenessResult doc;
        try (LocalCluster c = LocalCluster.start(
                o.tool(),
                o.jar(),
                Files.createTempDirectory("needle-staleness"),
                o.nodes(),
                "--heap",
                o.heap(),
                "--latency",
                o.latency())) {
            doc = new StalenessProbe.Run(c, o).call();
        } catch (IOException | RuntimeException e) {
            System.err.println("needle-bench: the staleness run failed: " + e);
            e.printStackTrace();
            return 1;
        }
        System.err.println("staleness: wrote " + o.out().resolve("staleness.json"));
        if (!doc.violations().isEmpty()) {
            System.err.println(
                    "needle-bench: reads that began more than S after the write missed it: " + doc.violations());
            return 1;
        }
        return 0;
    }

    /** One run on a started cluster. */
    private static final class Run {
        private final LocalCluster cluster;
        private final StalenessOptions o;
        private final CqlSession[] sessions; // [n]: every request to node n (index 0 unused)
        private final CqlSession routed; // token-aware: each insert goes to the key's owner
        private final long stalenessNanos;
        private final List<StalenessResult.Violation> violations = new ArrayList<>();
        private final ByteBuffer value = ByteBuffer.allocate(400);
        private final SyncCost sync;

        Run(LocalCluster cluster, StalenessOptions o) {
            this.cluster = cluster;
            this.o = o;
            this.sessions = new CqlSession[o.nodes() + 1];
            for (int n = 1; n <= o.nodes(); n++) {
                sessions[n] = cluster.session(n);
            }
            this.routed = cluster.session(1, true);
            this.stalenessNanos = BenchCluster.parseStaleness(o.staleness()) * 1_000_000L;
            this.sync = new SyncCost(cluster, sessions, routed, value, o.syncKeys(), o.pacedRate(), o.loadThreads());
        }

        StalenessResult call() throws IOException {
            createSchema();
            KeyOwners owners = new KeyOwners(routed, o.nodes());
            SplittableRandom random = new SplittableRandom(42);
            Map<String, StalenessResult.Phase> phases = new LinkedHashMap<>();
            StalenessResult doc = new StalenessResult(
                    "staleness of node-filter copies and cost of the sync",
                    Machine.facts(),
                    o.nodes(),
                    o.latency(),
                    o.staleness(),
                    "replication factor 1; each probe key written at ONE through its owner, then read at ONE back to back"
                            + " through every other node in turn until each returned it; phases idle and under a load of "
                            + o.loadThreads() + " loader threads inserting 400-byte partitions through their owners;"
                            + " Cassandra's mutation delivery and the owners' wait counted over each phase's measured"
                            + " keys (after its warm-up), from the histograms' bucket counts",
                    phases,
                    violations,
                    null,
                    null);
            for (boolean loaded : new boolean[] {false, true}) {
                phases.put(loaded ? "load" : "idle", probePhase(owners, random, loaded));
                save(doc);
            }
            doc = doc.withSyncCost(sync.measure(random), nodeFilterViews());
            save(doc);
            return doc;
        }

        /** Writes what is measured so far: an interrupted run keeps its finished phases. */
        private void save(StalenessResult doc) throws IOException {
            ResultFiles.write(o.out().resolve("staleness.json"), doc);
        }

        private void createSchema() throws IOException {
            CqlSession s = sessions[1];
            s.execute("CREATE KEYSPACE " + KEYSPACE
                    + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
            Map<String, String> options =
                    Map.of("node_filter", "one", "node_filter_copies", "all", "staleness", o.staleness());
            for (Variant v : List.of(STOCK, NEEDLE)) {
                for (String cql : v.ddl(KEYSPACE, options)) {
                    s.execute(cql);
                }
            }
            s.refreshSchema();
            routed.refreshSchema();
            long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
            for (int n = 1; n <= o.nodes(); n++) {
                cluster.jmx(n).awaitReady(KEYSPACE, NEEDLE.table());
            }
            for (int n = 1; n <= o.nodes(); n++) {
                BenchCluster.awaitTrustedCopies(sessions[n], KEYSPACE, NEEDLE.table(), deadline);
            }
        }

        /**
         * One phase of the probe, at idle or under load: the same keys' treatment for both tables,
         * key by key in turn (the same noise for both), after a warm-up that is not recorded.
         */
        private StalenessResult.Phase probePhase(KeyOwners owners, SplittableRandom random, boolean loaded)
                throws IOException {
            List<KeyProbe> probes = List.of(
                    new KeyProbe(NEEDLE, sessions, value, stalenessNanos, violations),
                    new KeyProbe(STOCK, sessions, value, stalenessNanos, violations));
            String label = loaded ? "under load" : "at idle";
            AtomicBoolean stop = new AtomicBoolean();
            AtomicReference<ClosedLoop.Outcome> load = new AtomicReference<>();
            AtomicReference<Throwable> loadFailure = new AtomicReference<>();
            Thread loader = null;
            long loadStart = System.nanoTime();
            if (loaded) {
                PreparedStatement li = routed.prepare(insertCql(NEEDLE));
                long base = random.nextLong() & Long.MAX_VALUE >>> 1;
                loader = new Thread(
                        () -> {
                            try {
                                load.set(ClosedLoop.runUntil(
                                        o.loadThreads(),
                                        stop::get,
                                        7,
                                        (i, r) -> {
                                            routed.execute(li.bind(base + i, value.duplicate()));
                                            return true;
                                        },
                                        new AtomicLong()));
                            } catch (Throwable e) {
                                loadFailure.set(e);
                            }
                        },
                        "needle-bench-loader");
                loader.start();
                BenchCluster.sleep(2000); // the load reaches its rate before the probe starts
            }
            Map<String, KeyProbe.Result> tables = new LinkedHashMap<>();
            Map<String, StalenessResult.Percentiles> delivery;
            Map<String, StalenessResult.ChangeWait> syncWait;
            try {
                int warmup = Math.max(50, o.keys() / 10);
                try (Progress pr = new Progress("probe warm-up " + label, warmup, "keys")) {
                    for (int k = 0; k < warmup; k++) {
                        for (KeyProbe p : probes) {
                            p.key(owners, random, loadFailure, false);
                        }
                        pr.done.incrementAndGet();
                    }
                }
                long[][] decisions0 = decisions();
                waitsSinceHere();
                try (Progress pr = new Progress("probe " + label, o.keys(), "keys")) {
                    for (int k = 0; k < o.keys(); k++) {
                        for (KeyProbe p : probes) {
                            p.key(owners, random, loadFailure, true);
                        }
                        pr.done.incrementAndGet();
                    }
                }
                for (KeyProbe p : probes) {
                    tables.put(p.v.name(), p.result(label));
                }
                long[][] decisions1 = decisions();
                Map<String, Long> d = new LinkedHashMap<>();
                for (int i = 0; i < DECISIONS.size(); i++) {
                    d.put(DECISIONS.get(i), sum(decisions1[i]) - sum(decisions0[i]));
                }
                tables.put(NEEDLE.name(), tables.get(NEEDLE.name()).withDecisions(d));
                delivery = mutationDelivery();
                syncWait = syncWait();
            } finally {
                stop.set(true);
                if (loader != null) {
                    try {
                        loader.join();
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }
            }
            StalenessResult.Load loadResult = null;
            if (loaded && load.get() != null) {
                ClosedLoop.Outcome l = load.get();
                loadResult = new StalenessResult.Load(
                        o.loadThreads(),
                        l.histogram().getTotalCount(),
                        Math.round(l.histogram().getTotalCount() / ((System.nanoTime() - loadStart) / 1e9)),
                        round(l.histogram().getValueAtPercentile(50) / 1e6),
                        round(l.histogram().getValueAtPercentile(99) / 1e6));
            }
            return new StalenessResult.Phase(tables, delivery, syncWait, loadResult);
        }

        /** Cassandra's timer of how long its mutation messages waited to be taken up. */
        private static final String DELIVERY =
                "org.apache.cassandra.metrics:type=Messaging,name=MUTATION_REQ-WaitLatency";

        /** The Needle table's histogram of how long its changes waited on their owner. */
        private static final String SYNC_WAIT = "org.apache.cassandra.metrics:type=Needle,keyspace=" + KEYSPACE
                + ",scope=" + NEEDLE.table() + ",name=NodeFilterChangeWaitMicros";

        /**
         * Starts the count of {@link #mutationDelivery} and {@link #syncWait} over here, at the
         * phase's first measured key: a read of {@code RecentValues} starts its next one over.
         */
        private void waitsSinceHere() throws IOException {
            for (int n = 1; n <= o.nodes(); n++) {
                recentBuckets(cluster.jmx(n), DELIVERY);
                recentBuckets(cluster.jmx(n), SYNC_WAIT);
            }
        }

        /**
         * How long Cassandra's own mutation messages waited between leaving one node and being
         * taken up by another (its {@code MUTATION_REQ-WaitLatency}, the "latencies waiting in
         * queue" of {@code nodetool tpstats}), per node, while the phase's keys were measured: the
         * sync's batches are such messages, so no copy can follow its owner faster.
         */
        private Map<String, StalenessResult.Percentiles> mutationDelivery() throws IOException {
            Map<String, StalenessResult.Percentiles> out = new LinkedHashMap<>();
            for (int n = 1; n <= o.nodes(); n++) {
                out.put(
                        "node" + n,
                        StalenessResult.Percentiles.ofBucketsMicros(recentBuckets(cluster.jmx(n), DELIVERY), false));
            }
            return out;
        }

        /**
         * How long the Needle table's changes waited on their owner for their batch (its {@code
         * NodeFilterChangeWaitMicros}, each change counted at its batch's oldest), per node, while
         * the phase's keys were measured: the sync's own part of a copy's lag, apart from
         * Cassandra's delivery of the batch ({@link #mutationDelivery}).
         */
        private Map<String, StalenessResult.ChangeWait> syncWait() throws IOException {
            Map<String, StalenessResult.ChangeWait> out = new LinkedHashMap<>();
            for (int n = 1; n <= o.nodes(); n++) {
                long[] counts = recentBuckets(cluster.jmx(n), SYNC_WAIT);
                out.put(
                        "node" + n,
                        new StalenessResult.ChangeWait(
                                Arrays.stream(counts).sum(),
                                StalenessResult.Percentiles.ofBucketsMicros(counts, true)));
            }
            return out;
        }

        /**
         * What a Cassandra histogram or timer counted in each of its buckets since the last read
         * (its {@code RecentValues}, without the decay of its percentiles, which weigh in minutes
         * before the phase).
         */
        private static long[] recentBuckets(NodeJmx jmx, String on) throws IOException {
            if (jmx.get(on, "RecentValues") instanceof long[] counts) {
                return counts;
            }
            throw new IllegalStateException(on + ": RecentValues is not an array of counts");
        }

        /** The node-filter decisions of the Needle table's coordinators ({@link #DECISIONS}), per node. */
        private long[][] decisions() throws IOException {
            long[][] out = new long[DECISIONS.size()][];
            for (int i = 0; i < out.length; i++) {
                out[i] = sync.needleCounters(NEEDLE, DECISIONS.get(i));
            }
            return out;
        }

        /** Node 1's view of the node filters of the Needle table at the end: keys and bytes of each. */
        private List<StalenessResult.NodeFilterRow> nodeFilterViews() {
            List<StalenessResult.NodeFilterRow> out = new ArrayList<>();
            for (var r : sessions[1].execute(
                    "SELECT owner, role, epoch, seq, keys, bytes, trusted FROM needle_views.node_filters"
                            + " WHERE keyspace_name = ? AND table_name = ?",
                    KEYSPACE,
                    NEEDLE.table())) {
                out.add(new StalenessResult.NodeFilterRow(
                        String.valueOf(r.getUuid("owner")),
                        r.getString("role"),
                        r.getLong("epoch"),
                        r.getLong("seq"),
                        r.getLong("keys"),
                        r.getLong("bytes"),
                        r.getBoolean("trusted")));
            }
            return out;
        }
    }

    /** Which node (its last address byte, 127.0.0.N) owns a key at replication factor 1. */
    static final class KeyOwners {
        private final TokenMap tokens;
        private final int nodes;

        KeyOwners(CqlSession session, int nodes) {
            this.tokens = session.getMetadata()
                    .getTokenMap()
                    .orElseThrow(() -> new IllegalStateException("the driver has no token map of the cluster"));
            this.nodes = nodes;
        }

        int owner(long key) {
            for (Node n : tokens.getReplicas(
                    CqlIdentifier.fromInternal(KEYSPACE), TypeCodecs.BIGINT.encode(key, ProtocolVersion.DEFAULT))) {
                if (n.getEndPoint().resolve() instanceof InetSocketAddress a) {
                    int last = a.getAddress().getAddress()[3];
                    return last >= 1 && last <= nodes ? last : -1;
                }
            }
            return -1;
        }
    }

    /** The insert of one new partition (one row, its 400-byte value bound second) into {@code v}'s table. */
    static String insertCql(Variant v) {
        return "INSERT INTO " + KEYSPACE + "." + v.table() + " (pk, ck, v) VALUES (?, 0, ?)";
    }

    private static long sum(long[] v) {
        return Arrays.stream(v).sum();
    }

    private static double round(double x) {
        return LatencyCalibration.round(x);
    }
}
