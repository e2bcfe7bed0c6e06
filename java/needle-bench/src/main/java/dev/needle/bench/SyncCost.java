package dev.needle.bench;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import dev.needle.testkit.LocalCluster;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;

/**
 * The sync-cost phase of {@link StalenessProbe}: bytes sent between nodes while new partitions are
 * inserted through their owners, less the rate of an idle period just before, per changed key and
 * receiving node; into the stock table (the control) and the Needle table, at full rate and paced.
 */
final class SyncCost {
    /** The idle period before each measured insert run, whose rate of internode bytes is the baseline. */
    private static final long IDLE_MILLIS = 10_000;

    private final LocalCluster cluster;
    private final CqlSession[] sessions;
    private final CqlSession routed;
    private final int nodes;
    private final ByteBuffer value;
    private final int syncKeys;
    private final int pacedRate;
    private final int loadThreads;

    /**
     * @param sessions    [n]: a session whose every request goes to node n (index 0 unused)
     * @param routed      a token-aware session: each insert goes to its key's owner
     * @param value       the value every inserted row holds
     * @param syncKeys    partitions inserted per run
     * @param pacedRate   inserts per second of the paced run
     * @param loadThreads threads of the full-rate run
     */
    SyncCost(
            LocalCluster cluster,
            CqlSession[] sessions,
            CqlSession routed,
            ByteBuffer value,
            int syncKeys,
            int pacedRate,
            int loadThreads) {
        this.cluster = cluster;
        this.sessions = sessions;
        this.routed = routed;
        this.nodes = sessions.length - 1;
        this.value = value;
        this.syncKeys = syncKeys;
        this.pacedRate = pacedRate;
        this.loadThreads = loadThreads;
    }

    /**
     * Wire bytes of the sync per changed key and receiving node: new partitions inserted
     * through their owners into the stock table (the control: no data crosses the network at
     * RF 1) and into the Needle table, at full rate and paced; each after an idle period whose
     * rate of internode bytes (gossip, heartbeats) is taken off.
     */
    Map<String, Map<String, Insertion>> measure(SplittableRandom random) throws IOException {
        Map<String, Map<String, Insertion>> out = new LinkedHashMap<>();
        for (int rate : new int[] {0, pacedRate}) {
            Map<String, Insertion> byTable = new LinkedHashMap<>();
            for (Variant v : List.of(StalenessProbe.STOCK, StalenessProbe.NEEDLE)) {
                double idle = idleBytesPerSecond();
                byTable.put(v.name(), insertAndCount(v, rate, random.nextLong() & Long.MAX_VALUE >>> 1, idle));
            }
            out.put(rate == 0 ? "full_rate" : "paced_" + rate + "_per_s", byTable);
        }
        return out;
    }

    /**
     * Internode bytes per second over {@link #IDLE_MILLIS} without inserts: gossip and heartbeats.
     * A snapshot of the Needle table sent meanwhile (a copy shrunk once its keys stopped moving) is
     * not idle traffic and would be taken off the next run's bytes: such a period is measured again,
     * up to three times, and the last one is kept whatever it held. A period during which a
     * connection's byte count started over is measured again too, and is never kept.
     */
    private double idleBytesPerSecond() throws IOException {
        Double rate = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            long snapshots0 = sum(needleCounters(StalenessProbe.NEEDLE, "NodeFilterSnapshotsSent"));
            Map<String, Long> before = internodeBytes();
            long t0 = System.nanoTime();
            BenchCluster.sleep(IDLE_MILLIS);
            long sent = bytesSince(before);
            if (sent < 0) {
                System.err.println("staleness: " + CONNECTION_RESET + ": measuring the idle rate again");
                continue;
            }
            rate = sent / ((System.nanoTime() - t0) / 1e9);
            if (sum(needleCounters(StalenessProbe.NEEDLE, "NodeFilterSnapshotsSent")) == snapshots0) {
                break;
            }
            System.err.println("staleness: a node-filter snapshot went out while idle: measuring the idle rate again");
        }
        if (rate == null) {
            throw new IOException("the idle rate of internode bytes could not be measured: three times "
                    + CONNECTION_RESET + "; run the probe again on a machine with nothing else running");
        }
        return rate;
    }

    /**
     * One table's inserts at one rate: the internode bytes at idle before them, the partitions,
     * their time and rate, the internode bytes during them and above the idle rate, and (Needle's
     * table) the changes its owners sent.
     */
    record Insertion(
            long idleInternodeBytesPerS,
            int partitions,
            double seconds,
            long insertsPerS,
            long internodeBytes,
            long internodeBytesAboveIdle,
            double internodeBytesAboveIdlePerPartitionPerReceivingNode,

            @JsonUnwrapped @JsonInclude(JsonInclude.Include.NON_NULL)
            Changes changes) {}

    /**
     * The changes of Needle's table: how many were sent, the snapshots its owners sent meanwhile
     * (whose bytes are in the wire's), their batches' bytes and the wire's per change.
     */
    record Changes(
            long changesSent,
            long snapshotsSent,
            Double batchPayloadBytesPerChange,
            Double wireBytesPerChangePerReceivingNode) {}

    /**
     * {@link #insertOnce}, again with new keys (up to three times in all) while a connection's
     * byte count started over during it: such a run's bytes are not all counted.
     */
    private Insertion insertAndCount(Variant v, int rate, long base, double idleBytesPerSecond) throws IOException {
        Insertion r = null;
        for (int attempt = 0; attempt < 3; attempt++) {
            r = insertOnce(v, rate, base + attempt * (long) syncKeys, idleBytesPerSecond);
            if (r.internodeBytes() >= 0) {
                break;
            }
            System.err.println("staleness: " + CONNECTION_RESET + ": inserting again with new keys");
        }
        if (r.internodeBytes() < 0) {
            throw new IOException("the sync cost of " + v.name() + " could not be measured: three times "
                    + CONNECTION_RESET + "; run the probe again on a machine with nothing else running");
        }
        return r;
    }

    private static final String CONNECTION_RESET =
            "a connection between nodes started its byte count over (a reconnection)";

    private Insertion insertOnce(Variant v, int rate, long base, double idleBytesPerSecond) throws IOException {
        PreparedStatement insert = routed.prepare(StalenessProbe.insertCql(v));
        int keys = rate == 0 ? syncKeys : Math.min(syncKeys, rate * 30);
        long[] changes0 = v.needle() ? needleCounters(v, "NodeFilterChangesSent") : null;
        long[] payload0 = v.needle() ? needleCounters(v, "NodeFilterBatchBytesSent") : null;
        long[] snapshots0 = v.needle() ? needleCounters(v, "NodeFilterSnapshotsSent") : null;
        Map<String, Long> bytes0 = internodeBytes();
        long start = System.nanoTime();
        String label = "sync cost, " + v.name() + (rate == 0 ? " at full rate" : " at " + rate + "/s");
        try (Progress pr = new Progress(label, keys, "partitions")) {
            if (rate == 0) {
                ClosedLoop.run(
                        loadThreads,
                        keys,
                        11,
                        (i, r) -> {
                            routed.execute(insert.bind(base + i, value.duplicate()));
                            return true;
                        },
                        pr.done);
            } else {
                for (int i = 0; i < keys; i++) {
                    long due = start + i * 1_000_000_000L / rate;
                    long wait = due - System.nanoTime();
                    if (wait > 0) {
                        sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                    }
                    routed.execute(insert.bind(base + i, value.duplicate()));
                    pr.done.incrementAndGet();
                }
            }
        }
        BenchCluster.sleep(500); // the last batches leave
        double seconds = (System.nanoTime() - start) / 1e9;
        long wire = bytesSince(bytes0);
        double extra = wire - idleBytesPerSecond * seconds;
        Changes changes = null;
        if (v.needle()) {
            long sent = sum(needleCounters(v, "NodeFilterChangesSent")) - sum(changes0);
            long payload = sum(needleCounters(v, "NodeFilterBatchBytesSent")) - sum(payload0);
            // Each change is counted once per node it is sent to.
            changes = new Changes(
                    sent,
                    sum(needleCounters(v, "NodeFilterSnapshotsSent")) - sum(snapshots0),
                    sent == 0 ? null : LatencyCalibration.round((double) payload / sent),
                    sent == 0 ? null : LatencyCalibration.round(extra / sent));
        }
        Insertion r = new Insertion(
                Math.round(idleBytesPerSecond),
                keys,
                LatencyCalibration.round(seconds),
                Math.round(keys / seconds),
                wire,
                Math.round(extra),
                LatencyCalibration.round(extra / keys / (nodes - 1)),
                changes);
        System.err.printf("staleness: %s: %s%n", label, r);
        return r;
    }

    /** A Needle counter of table {@code v} on every node ([n-1] for node n). */
    long[] needleCounters(Variant v, String name) throws IOException {
        long[] out = new long[nodes];
        for (int n = 1; n <= nodes; n++) {
            out[n - 1] = cluster.jmx(n).metric(StalenessProbe.KEYSPACE, v.table(), name);
        }
        return out;
    }

    /**
     * Bytes each node has sent to each other node ({@code system_views.internode_outbound}), by
     * node and peer. A count starts over when Cassandra builds a node's connections to a peer
     * anew.
     */
    private Map<String, Long> internodeBytes() {
        Map<String, Long> out = new LinkedHashMap<>();
        for (int n = 1; n <= nodes; n++) {
            for (var r : sessions[n].execute("SELECT address, port, sent_bytes FROM system_views.internode_outbound")) {
                out.merge(
                        n + " " + r.getInetAddress("address") + ":" + r.getInt("port"),
                        r.getLong("sent_bytes"),
                        Long::sum);
            }
        }
        return out;
    }

    /**
     * Bytes sent between nodes since {@code before} ({@link #internodeBytes}), or -1 if a count
     * started over or went away meanwhile (the bytes before that are not known).
     */
    private long bytesSince(Map<String, Long> before) {
        return bytesSince(before, internodeBytes());
    }

    static long bytesSince(Map<String, Long> before, Map<String, Long> after) {
        long total = 0;
        for (Map.Entry<String, Long> e : after.entrySet()) {
            long was = before.getOrDefault(e.getKey(), 0L);
            if (e.getValue() < was) {
                return -1;
            }
            total += e.getValue() - was;
        }
        return before.keySet().stream().allMatch(after::containsKey) ? total : -1;
    }

    private static long sum(long[] v) {
        return Arrays.stream(v).sum();
    }

    private static void sleep(long ms, int nanos) {
        try {
            Thread.sleep(ms, nanos);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", e);
        }
    }
}
