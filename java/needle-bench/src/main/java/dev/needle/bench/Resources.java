package dev.needle.bench;

import com.datastax.oss.driver.api.core.CqlSession;
import dev.needle.testkit.LocalCluster;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * What the nodes of a local cluster spend: CPU time of each node's process ({@code /proc/PID/stat}:
 * user plus system time), the bytes each node sent to and received from the others (Cassandra's
 * {@code system_views.internode_outbound} and {@code internode_inbound}), and the bytes of node
 * filters each node published (Needle's {@code needle_views.node_filters}: snapshots and batches,
 * counted once per node they are sent to).
 *
 * <p>{@link #read()} takes every counter at once, so the difference of two readings is what a phase
 * cost; {@link #startTimeline} samples them in the background as rates per interval, each sample
 * labelled with the phase the harness said was running (the 2022 paper's Tables 11-13 are such time
 * series). Reading costs three queries of virtual tables per node and a file read per node.
 */
final class Resources implements AutoCloseable {
    /** Clock ticks per second of {@code /proc/PID/stat} (USER_HZ, 100 on Linux's common platforms). */
    private final long ticksPerSecond;

    private final LocalCluster cluster;
    private final int nodes;
    private final CqlSession[] sessions;
    private final List<Map<String, Object>> timeline = new ArrayList<>();
    private volatile String phase = "start";
    private Thread sampler;
    private volatile boolean stopping;

    /**
     * The counters of every node at one moment ([n-1] is node n).
     *
     * @param nanos          {@link System#nanoTime()} when taken
     * @param cpuTicks       the node process's user plus system time, in clock ticks
     * @param sentBytes      bytes the node sent to other nodes
     * @param sentMessages   messages the node sent to other nodes (requests and responses alike)
     * @param receivedBytes  bytes the node received from other nodes
     * @param syncBytes      bytes of node filters the node published (every Needle table)
     * @param machineBusy    ticks of the whole machine spent busy ({@code /proc/stat}), and in all
     * @param machineTotal   ticks of the whole machine in all
     */
    record Reading(
            long nanos,
            long[] cpuTicks,
            long[] sentBytes,
            long[] sentMessages,
            long[] receivedBytes,
            long[] syncBytes,
            long machineBusy,
            long machineTotal) {

        /** What happened between {@code earlier} and this reading. */
        Reading minus(Reading earlier) {
            return new Reading(
                    nanos - earlier.nanos,
                    diff(cpuTicks, earlier.cpuTicks),
                    diff(sentBytes, earlier.sentBytes),
                    diff(sentMessages, earlier.sentMessages),
                    diff(receivedBytes, earlier.receivedBytes),
                    diff(syncBytes, earlier.syncBytes),
                    machineBusy - earlier.machineBusy,
                    machineTotal - earlier.machineTotal);
        }

        /** The sum of this difference and {@code other} (null: this one). */
        Reading plus(Reading other) {
            if (other == null) {
                return this;
            }
            return new Reading(
                    nanos + other.nanos,
                    sum(cpuTicks, other.cpuTicks),
                    sum(sentBytes, other.sentBytes),
                    sum(sentMessages, other.sentMessages),
                    sum(receivedBytes, other.receivedBytes),
                    sum(syncBytes, other.syncBytes),
                    machineBusy + other.machineBusy,
                    machineTotal + other.machineTotal);
        }

        /**
         * The growth of each counter, never below 0: a counter that went back was started again
         * (a connection between nodes opened anew, a Needle index dropped), and its growth since
         * is not known.
         */
        private static long[] diff(long[] a, long[] b) {
            long[] out = new long[a.length];
            for (int i = 0; i < a.length; i++) {
                out[i] = Math.max(0, a[i] - b[i]);
            }
            return out;
        }

        private static long[] sum(long[] a, long[] b) {
            long[] out = new long[a.length];
            for (int i = 0; i < a.length; i++) {
                out[i] = a[i] + b[i];
            }
            return out;
        }
    }

    Resources(LocalCluster cluster, int nodes) throws IOException {
        this.cluster = cluster;
        this.nodes = nodes;
        this.ticksPerSecond = clockTicks();
        this.sessions = new CqlSession[nodes + 1];
        for (int n = 1; n <= nodes; n++) {
            sessions[n] = cluster.session(n);
        }
    }

    /** Every counter of every node now. */
    synchronized Reading read() throws IOException {
        long[] cpu = new long[nodes];
        long[] sent = new long[nodes];
        long[] messages = new long[nodes];
        long[] received = new long[nodes];
        long[] sync = new long[nodes];
        for (int n = 1; n <= nodes; n++) {
            cpu[n - 1] = processTicks(nodePid(n));
            for (var r : sessions[n].execute("SELECT sent_bytes, sent_count FROM system_views.internode_outbound")) {
                sent[n - 1] += r.getLong("sent_bytes");
                messages[n - 1] += r.getLong("sent_count");
            }
            for (var r : sessions[n].execute("SELECT received_bytes FROM system_views.internode_inbound")) {
                received[n - 1] += r.getLong("received_bytes");
            }
            for (var r : sessions[n].execute("SELECT role, bytes FROM needle_views.node_filters")) {
                if ("published".equals(r.getString("role"))) {
                    sync[n - 1] += r.getLong("bytes");
                }
            }
        }
        long[] machine = machineTicks();
        return new Reading(System.nanoTime(), cpu, sent, messages, received, sync, machine[0], machine[1]);
    }

    /**
     * What the copies of node filters of {@code keyspace.table} take on each node, from {@code
     * needle_views.node_filters}: the keys the node publishes (its own), how many copies it keeps
     * of other nodes' filters, their keys and bytes, and the copies' bytes per key of its own
     * (the measure of scoped copies: about 1.7 x (RF - 1) bytes per own key, against the whole
     * cluster's keys with copies of every node).
     */
    CopyMemory copyMemory(String keyspace, String table) {
        List<NodeCopies> perNode = new ArrayList<>();
        long ownKeys = 0;
        long copyBytes = 0;
        for (int n = 1; n <= nodes; n++) {
            long own = 0;
            long bytes = 0;
            long keys = 0;
            int copies = 0;
            for (var r : sessions[n].execute(
                    "SELECT role, keys, bytes FROM needle_views.node_filters WHERE keyspace_name = ? AND table_name = ?",
                    keyspace,
                    table)) {
                if ("published".equals(r.getString("role"))) {
                    own += r.getLong("keys");
                } else {
                    copies++;
                    keys += r.getLong("keys");
                    bytes += r.getLong("bytes");
                }
            }
            perNode.add(new NodeCopies(n, own, copies, keys, bytes));
            ownKeys += own;
            copyBytes += bytes;
        }
        return new CopyMemory(ownKeys == 0 ? null : LatencyCalibration.round((double) copyBytes / ownKeys), perNode);
    }

    /** The copies' memory of one table: bytes per key the nodes publish, over all nodes, and each node's. */
    record CopyMemory(Double copyBytesPerOwnKey, List<NodeCopies> nodes) {}

    /** One node's copies of a table: the keys it publishes, its copies and their keys and bytes. */
    record NodeCopies(int node, long ownKeys, int copies, long copyKeys, long copyBytes) {}

    /** Labels the samples taken from now on (e.g. the variant being loaded). */
    void phase(String name) {
        phase = name;
    }

    /**
     * Samples every {@code intervalSeconds} in the background until {@link #close}: per sample, its
     * time since the start, the phase, and per node the CPU (percent of one core), the bytes per
     * second sent to and received from other nodes and of node filters published.
     */
    void startTimeline(double intervalSeconds) throws IOException {
        long intervalNanos = (long) (intervalSeconds * 1e9);
        Reading first = read();
        sampler = new Thread(
                () -> {
                    Reading last = first;
                    long next = first.nanos + intervalNanos;
                    while (!stopping) {
                        long wait = next - System.nanoTime();
                        if (wait > 0) {
                            try {
                                Thread.sleep(wait / 1_000_000, (int) (wait % 1_000_000));
                            } catch (InterruptedException ex) {
                                return;
                            }
                            continue;
                        }
                        next += intervalNanos;
                        try {
                            String label = phase;
                            Reading now = read();
                            Map<String, Object> sample = sample(now.minus(last));
                            sample.put("t_s", round((now.nanos - first.nanos) / 1e9, 1));
                            sample.put("phase", label);
                            synchronized (timeline) {
                                timeline.add(sample);
                            }
                            last = now;
                        } catch (IOException | RuntimeException ex) {
                            if (!stopping) {
                                System.err.println("resource sample failed (skipped): " + ex.getMessage());
                            }
                        }
                    }
                },
                "needle-bench-resources");
        sampler.setDaemon(true);
        sampler.start();
    }

    /** The samples taken so far. */
    List<Map<String, Object>> timeline() {
        synchronized (timeline) {
            return new ArrayList<>(timeline);
        }
    }

    /** One timeline sample of a difference: rates per node, and the machine's busy share. */
    private Map<String, Object> sample(Reading d) {
        double seconds = d.nanos / 1e9;
        Map<String, Object> s = new LinkedHashMap<>();
        s.put("cpu_pct", perNode(d.cpuTicks, v -> 100.0 * v / ticksPerSecond / seconds, 1));
        s.put("sent_bytes_s", perNode(d.sentBytes, v -> v / seconds, 0));
        s.put("received_bytes_s", perNode(d.receivedBytes, v -> v / seconds, 0));
        s.put("sync_bytes_s", perNode(d.syncBytes, v -> v / seconds, 0));
        s.put("machine_busy_pct", d.machineTotal > 0 ? round(100.0 * d.machineBusy / d.machineTotal, 1) : null);
        return s;
    }

    /**
     * What a phase of {@code ops} operations cost, from the difference of two readings: CPU seconds
     * of all nodes (and per node), CPU in percent of one core, internode bytes, node-filter bytes,
     * and each per operation when {@code ops} > 0.
     */
    Map<String, Object> totals(Reading d, long ops) {
        double seconds = d.nanos / 1e9;
        long cpuTicks = Arrays.stream(d.cpuTicks).sum();
        double cpuSeconds = (double) cpuTicks / ticksPerSecond;
        long sent = Arrays.stream(d.sentBytes).sum();
        long messages = Arrays.stream(d.sentMessages).sum();
        long received = Arrays.stream(d.receivedBytes).sum();
        long sync = Arrays.stream(d.syncBytes).sum();
        Map<String, Object> t = new LinkedHashMap<>();
        t.put("seconds", round(seconds, 2));
        t.put("ops", ops);
        t.put("cpu_s", round(cpuSeconds, 2));
        t.put("cpu_s_per_node", perNode(d.cpuTicks, v -> (double) v / ticksPerSecond, 2));
        t.put("cpu_pct_of_one_core", seconds > 0 ? round(100 * cpuSeconds / seconds, 1) : null);
        t.put("machine_busy_pct", d.machineTotal > 0 ? round(100.0 * d.machineBusy / d.machineTotal, 1) : null);
        t.put("internode_sent_bytes", sent);
        t.put("internode_received_bytes", received);
        t.put("internode_sent_bytes_per_node", d.sentBytes.clone());
        t.put("internode_sent_messages", messages);
        t.put("internode_received_bytes_per_node", d.receivedBytes.clone());
        t.put("sync_bytes", sync);
        t.put("internode_sent_bytes_s", seconds > 0 ? Math.round(sent / seconds) : null);
        t.put("sync_bytes_s", seconds > 0 ? Math.round(sync / seconds) : null);
        if (ops > 0) {
            t.put("cpu_ms_per_op", round(cpuSeconds * 1000 / ops, 4));
            t.put("internode_sent_bytes_per_op", round((double) sent / ops, 1));
            t.put("internode_sent_messages_per_op", round((double) messages / ops, 3));
            t.put("sync_bytes_per_op", round((double) sync / ops, 2));
        }
        return t;
    }

    @Override
    public void close() {
        stopping = true;
        if (sampler != null) {
            sampler.interrupt();
            try {
                sampler.join(10_000);
            } catch (InterruptedException ex) {
                Thread.currentThread().interrupt();
            }
        }
        for (int n = 1; n <= nodes; n++) {
            if (sessions[n] != null) {
                sessions[n].close();
            }
        }
    }

    private long nodePid(int node) throws IOException {
        Path f = cluster.nodeDir(node).resolve("node.pid");
        try {
            return Long.parseLong(Files.readString(f).trim());
        } catch (NumberFormatException ex) {
            throw new IOException("node " + node + "'s pid file " + f + " holds no pid", ex);
        }
    }

    /** User plus system time of a process, in clock ticks ({@code /proc/PID/stat}, fields 14 and 15). */
    static long processTicks(long pid) throws IOException {
        return parseStatTicks(Files.readString(Path.of("/proc", Long.toString(pid), "stat")));
    }

    /** utime + stime of a {@code /proc/PID/stat} line (the command, in parentheses, may hold spaces). */
    static long parseStatTicks(String stat) {
        String[] f = stat.substring(stat.lastIndexOf(')') + 2).trim().split("\\s+");
        // f[0] is field 3 (state): utime is field 14, stime field 15.
        return Long.parseLong(f[11]) + Long.parseLong(f[12]);
    }

    /** {busy, total} ticks of the whole machine, from the first line of {@code /proc/stat}. */
    static long[] machineTicks() throws IOException {
        return parseMachineTicks(Files.readAllLines(Path.of("/proc/stat")).get(0));
    }

    /** {busy, total} of a {@code cpu ...} line of {@code /proc/stat}: idle and iowait are not busy. */
    static long[] parseMachineTicks(String cpuLine) {
        String[] f = cpuLine.trim().split("\\s+");
        long total = 0, idle = 0;
        for (int i = 1; i < f.length && i <= 8; i++) { // user nice system idle iowait irq softirq steal
            long v = Long.parseLong(f[i]);
            total += v;
            if (i == 4 || i == 5) {
                idle += v;
            }
        }
        return new long[] {total - idle, total};
    }

    private static long clockTicks() {
        try {
            Process p = new ProcessBuilder("getconf", "CLK_TCK")
                    .redirectErrorStream(true)
                    .start();
            String out = new String(p.getInputStream().readAllBytes()).trim();
            if (p.waitFor() == 0) {
                return Long.parseLong(out);
            }
        } catch (IOException | NumberFormatException ex) {
            // fall through
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
        }
        return 100;
    }

    private static List<Double> perNode(long[] values, java.util.function.LongToDoubleFunction f, int digits) {
        List<Double> out = new ArrayList<>(values.length);
        for (long v : values) {
            out.add(round(f.applyAsDouble(v), digits));
        }
        return out;
    }

    static double round(double v, int digits) {
        double scale = Math.pow(10, digits);
        return Math.round(v * scale) / scale;
    }
}
