package dev.needle.bench;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.servererrors.InvalidQueryException;
import dev.needle.testkit.LocalCluster;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;

/**
 * The cluster as an experiment drives it between measurements: schema changes that wait until
 * every node has them, flushes and compactions that wait until nothing is pending, waits for
 * Needle's indexes and node-filter copies to be ready, the page cache dropped, bytes on disk per
 * table. Each wait has a deadline and an error that says where to look.
 */
final class BenchCluster {
    private final LocalCluster cluster;
    private final CqlSession session;
    private final int nodes;
    private final PrintStream log;

    BenchCluster(LocalCluster cluster, CqlSession session, int nodes, PrintStream log) {
        this.cluster = cluster;
        this.session = session;
        this.nodes = nodes;
        this.log = log;
    }

    /** The cluster's nodes, numbered from 1. */
    LocalCluster nodes() {
        return cluster;
    }

    /** How many nodes the cluster has. */
    int size() {
        return nodes;
    }

    /**
     * Runs a schema change and waits until every node has it: on several nodes sharing two cores,
     * the driver's own wait (10 s) can end first, and the next statement may then reach a node
     * that does not know the table yet. The versions the driver compares come by gossip and can
     * agree a moment before a node has applied the change, so a statement that reaches such a
     * node and fails because a table does not exist (which applied nothing) is sent again.
     */
    void ddl(String cql) {
        long deadline = System.nanoTime() + Duration.ofMinutes(2).toNanos();
        while (true) {
            try {
                session.execute(cql);
                break;
            } catch (InvalidQueryException ex) {
                String m = String.valueOf(ex.getMessage());
                boolean unknownTable = m.contains("doesn't exist") || m.contains("unconfigured table");
                if (!unknownTable || System.nanoTime() > deadline) {
                    throw ex;
                }
                sleep(500);
            }
        }
        while (!session.checkSchemaAgreement()) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the nodes do not agree on the schema 2 minutes after: " + cql
                        + " (see 'needle-cluster nodetool 1 describecluster')");
            }
            sleep(250);
        }
    }

    /**
     * Flushes and compacts {@code keyspace} as asked, then waits until no compaction is pending,
     * so every variant is measured on a settled SSTable layout.
     */
    void settle(String keyspace, boolean flush, boolean compact) throws IOException {
        for (int node = 1; node <= nodes; node++) {
            if (flush) {
                log.println("flushing" + onNode(node));
                cluster.flush(node, keyspace);
            }
            if (compact) {
                log.println("compacting (major compaction)" + onNode(node));
                cluster.compact(node, keyspace);
            }
        }
        long deadline = System.nanoTime() + Duration.ofMinutes(30).toNanos();
        for (int node = 1; node <= nodes; node++) {
            while (cluster.jmx(node).gauge("org.apache.cassandra.metrics:type=Compaction,name=PendingTasks") > 0) {
                if (System.nanoTime() > deadline) {
                    throw new IllegalStateException("compactions still pending after 30 minutes; see 'needle-cluster "
                            + "nodetool " + node + " compactionstats'");
                }
                sleep(500);
            }
        }
    }

    /**
     * Waits until the Needle index of every table in {@code needleTables} knows all its sources
     * on every node (nothing is skipped before) and, with node filters of bound
     * {@code stalenessMillis} (null: none), until node 1 trusts its copies of every other node's
     * filters and they hold every change made before the wait.
     */
    void waitNeedleReady(String keyspace, List<String> needleTables, Long stalenessMillis) throws IOException {
        long deadline = System.nanoTime() + Duration.ofMinutes(10).toNanos();
        for (int node = 1; node <= nodes; node++) {
            for (String table : needleTables) {
                while (cluster.jmx(node).metric(keyspace, table, "Ready") != 1) {
                    if (System.nanoTime() > deadline) {
                        throw new IllegalStateException("the Needle index on " + table + onNode(node)
                                + " is not ready after 10 minutes; see the node's log (needle-cluster logs " + node
                                + ")");
                    }
                    sleep(200);
                }
            }
        }
        if (stalenessMillis != null) {
            // A copy trusted after S and a second and a half holds every change made before the
            // wait, and node 1's own writes are no longer exempt from skipping.
            sleep(stalenessMillis + 1500);
            for (String table : needleTables) {
                awaitTrustedCopies(session, keyspace, table, deadline);
            }
        }
    }

    /**
     * Waits until the node {@code session} talks to trusts a copy of the filter of {@code
     * keyspace.table} of every node it receives from: every other node with {@code
     * node_filter_copies = 'all'}, the nodes it shares a token range with otherwise (as many as it
     * sends to: the {@code receivers} of its own row in {@code needle_views.node_filters}); past
     * {@code deadline} (a {@link System#nanoTime()}) throws with the copies' states.
     */
    static void awaitTrustedCopies(CqlSession session, String keyspace, String table, long deadline) {
        while (true) {
            List<String> states = new ArrayList<>();
            int trusted = 0;
            int expected = -1;
            for (var r : session.execute(
                    "SELECT owner, role, trusted, state, receivers FROM needle_views.node_filters"
                            + " WHERE keyspace_name = ? AND table_name = ?",
                    keyspace,
                    table)) {
                states.add(r.getFormattedContents());
                if ("copy".equals(r.getString("role")) && r.getBoolean("trusted")) {
                    trusted++;
                } else if ("published".equals(r.getString("role"))) {
                    expected = r.getInt("receivers");
                }
            }
            if (expected >= 0 && trusted == expected) {
                return;
            }
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("a node does not trust copies of the filters of " + keyspace + "."
                        + table + " of every node it receives from after 10 minutes: " + states);
            }
            sleep(200);
        }
    }

    /** A staleness bound as the index takes it (e.g. 500ms, 2s), in milliseconds. */
    static long parseStaleness(String option) {
        String s = option.trim();
        Matcher m = Pattern.compile("(\\d+(?:\\.\\d+)?)\\s*(ms|s)").matcher(s);
        if (!m.matches()) {
            throw new IllegalArgumentException("index option staleness '" + s + "' is not like 500ms or 2s");
        }
        return Math.round(Double.parseDouble(m.group(1)) * (m.group(2).equals("s") ? 1000 : 1));
    }

    /** Checks, before anything starts, that cold-cache runs can drop the page cache. */
    static void checkCanDropCaches() {
        if (!Files.isWritable(Path.of("/proc/sys/vm/drop_caches"))) {
            throw new IllegalStateException("cold-cache runs drop the page cache through /proc/sys/vm/drop_caches, "
                    + "which needs root; run as root, or pass --warm-only");
        }
    }

    /** Drops the kernel's page cache and Cassandra's key cache: the next reads go to the disk. */
    void dropCaches() throws IOException {
        try {
            new ProcessBuilder("sync").inheritIO().start().waitFor();
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IOException(ex);
        }
        Files.writeString(Path.of("/proc/sys/vm/drop_caches"), "3\n", StandardOpenOption.WRITE);
        for (int node = 1; node <= nodes; node++) {
            cluster.jmx(node).invalidateKeyCache();
        }
    }

    /** Bytes on disk of each of {@code tables} (by variant name), summed over the nodes. */
    Map<String, PointResult.TableBytes> tableBytes(String keyspace, Map<String, String> tables) throws IOException {
        Map<String, PointResult.TableBytes> out = new LinkedHashMap<>();
        for (Map.Entry<String, String> t : tables.entrySet()) {
            long data = 0, needle = 0;
            String marker = "/" + keyspace + "/" + t.getValue() + "-";
            try (Stream<Path> files = Files.walk(cluster.dir())) {
                for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                    if (("/" + cluster.dir().relativize(f)).contains(marker)) {
                        // Needle's filters are saved as SSTable components named -Needle+...
                        if (f.getFileName().toString().contains("-Needle+")) {
                            needle += Files.size(f);
                        } else {
                            data += Files.size(f);
                        }
                    }
                }
            }
            long sstables = 0;
            for (int node = 1; node <= nodes; node++) {
                sstables += cluster.jmx(node)
                        .gauge("org.apache.cassandra.metrics:type=Table,keyspace=" + keyspace + ",scope=" + t.getValue()
                                + ",name=LiveSSTableCount");
            }
            out.put(t.getKey(), new PointResult.TableBytes(data, needle, sstables));
        }
        return out;
    }

    /** " on node N", or nothing on a single node: for messages. */
    String onNode(int node) {
        return nodes == 1 ? "" : " on node " + node;
    }

    static void sleep(long ms) {
        try {
            Thread.sleep(ms);
        } catch (InterruptedException ex) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted", ex);
        }
    }
}
