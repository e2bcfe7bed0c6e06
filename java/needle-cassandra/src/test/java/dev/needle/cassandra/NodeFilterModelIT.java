package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.NodeJmx;
import dev.needle.testkit.TwinTables;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/**
 * Node filters against stock Cassandra, randomized: keyspaces of replication factor 1, 2 and 3,
 * each with a table whose Needle index has node filters on at ONE and QUORUM (copies of every
 * node at replication factor 1, copies scoped to the ranges a node replicates at 2 and 3), and
 * its twin without; random writes through random coordinators, and every read, through a random
 * coordinator (a replica or not) at ONE, LOCAL_ONE or QUORUM, compared with the twin's; flushes,
 * compactions, and kill -9 and restarts between them, with writes while a node is down that reach
 * it as hints.
 *
 * <p>Two checks, the two halves of invariant 5. Between quiescent points, a read may differ from
 * the twin's only by being empty where the twin has rows, and only if the key was written less
 * than S before the read began (bounded staleness: a write through another coordinator may not
 * have reached the copies yet). At each quiescent point (nothing written for longer than S),
 * every key is read through every coordinator at every level, and no read may differ.
 *
 * <p>{@code -Dneedle.nf.nodes} (default 3), {@code -Dneedle.nf.ops} (default 400), {@code
 * -Dneedle.it.seed} replays a run.
 */
class NodeFilterModelIT {
    private static final long STALENESS_MILLIS = 1000;
    private static final int KEYS = 60;
    private static final String[] KEYSPACES = {"r1", "r2", "r3"};
    private static final ConsistencyLevel[] LEVELS = {
        ConsistencyLevel.ONE, ConsistencyLevel.LOCAL_ONE, ConsistencyLevel.QUORUM
    };

    private final int nodes = Integer.getInteger("needle.nf.nodes", 3);
    private final int ops = Integer.getInteger("needle.nf.ops", 400);
    private final long seed = Long.getLong("needle.it.seed", System.nanoTime());
    private final SplittableRandom r = new SplittableRandom(seed);
    private final ArrayDeque<String> recent = new ArrayDeque<>();
    private final Map<String, Long> lastWrite = new HashMap<>();
    private final Map<String, TwinTables> pairs = new HashMap<>();
    private LocalCluster cluster;
    private CqlSession[] sessions;
    private long compared;
    private long staleMisses;
    private long quiescentReads;

    private void note(String what) {
        recent.addLast((System.currentTimeMillis() % 1_000_000) + " " + what);
        if (recent.size() > 40) {
            recent.removeFirst();
        }
    }

    @Test
    void readsMatchStockWithinTheStalenessBound() throws Exception {
        System.out.println("NodeFilterModelIT " + nodes + " nodes, " + ops + " operations, seed " + seed);
        long t0 = System.nanoTime();
        try (LocalCluster c =
                LocalCluster.start(nodes, "--yaml", "commitlog_sync=batch", "--yaml", "commitlog_sync_period=0ms")) {
            cluster = c;
            sessions = new CqlSession[nodes + 1];
            try {
                for (int n = 1; n <= nodes; n++) {
                    sessions[n] = c.session(n);
                }
                for (int i = 0; i < KEYSPACES.length; i++) {
                    String ks = KEYSPACES[i];
                    sessions[1].execute("CREATE KEYSPACE " + ks
                            + " WITH replication = {'class': 'SimpleStrategy', 'replication_factor': "
                            + Math.min(i + 1, nodes) + "}");
                    TwinTables t = new TwinTables(ks + ".t", ks + ".t_twin");
                    t.schema(sessions[1], "CREATE TABLE %s (pk int, ck int, v text, PRIMARY KEY (pk, ck))");
                    TwinTables.execute(
                            sessions[1],
                            SimpleStatement.newInstance("CREATE CUSTOM INDEX ON " + ks
                                    + ".t () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = "
                                    + "{'node_filter': 'quorum', 'node_filter_copies': '"
                                    + (i == 0 ? "all" : "replicas")
                                    + "', 'staleness': '" + STALENESS_MILLIS + "ms'}"));
                    pairs.put(ks, t);
                }
                // DDL waits 10 s for the schema to agree; four nodes on two cores can take longer.
                long deadline = System.nanoTime() + 120_000_000_000L;
                for (int n = 1; n <= nodes; n++) {
                    while (!sessions[n].checkSchemaAgreement()) {
                        assertTrue(System.nanoTime() < deadline, "node " + n + ": no schema agreement in 120 s");
                        Thread.sleep(200);
                    }
                }
                for (int op = 0; op < ops; op++) {
                    step(op);
                    if (op % 200 == 199) {
                        quiescentPoint();
                    }
                }
                quiescentPoint();
                long skipped = 0;
                for (int n = 1; n <= nodes; n++) {
                    for (String ks : KEYSPACES) {
                        skipped += c.jmx(n).metric(ks, "t", "NodeSkipsOne")
                                + c.jmx(n).metric(ks, "t", "NodeSkipsQuorum");
                    }
                }
                double seconds = (System.nanoTime() - t0) / 1e9;
                System.out.printf(
                        "NodeFilterModelIT %d nodes: %d operations in %.0f s, %d reads compared (%d at quiescent points),"
                                + " %d skipped by node filters, %d empty within S of a write through another node%n",
                        nodes, ops, seconds, compared, quiescentReads, skipped, staleMisses);
                assertTrue(skipped > ops / 10, "node filters skipped only " + skipped + " reads");
            } finally {
                for (CqlSession s : sessions) {
                    if (s != null) {
                        s.close();
                    }
                }
            }
        } catch (AssertionError | RuntimeException e) {
            throw new AssertionError(
                    "seed " + seed + " (replay with -Dneedle.it.seed=" + seed + "); the last operations:\n  "
                            + String.join("\n  ", recent) + "\n" + e.getMessage(),
                    e);
        }
    }

    private int node() {
        return 1 + r.nextInt(nodes);
    }

    private void step(int op) throws Exception {
        String ks = KEYSPACES[r.nextInt(KEYSPACES.length)];
        int pk = r.nextInt(KEYS);
        int kind = r.nextInt(10);
        int n = node();
        String cql;
        Object[] args;
        if (kind < 5) {
            cql = "INSERT INTO %s (pk, ck, v) VALUES (?, ?, ?)";
            args = new Object[] {pk, r.nextInt(3), "v" + op};
        } else if (kind < 7) {
            cql = "DELETE FROM %s WHERE pk = ?";
            args = new Object[] {pk};
        } else if (kind < 9) {
            cql = "DELETE FROM %s WHERE pk = ? AND ck = ?";
            args = new Object[] {pk, r.nextInt(3)};
        } else {
            cql = null;
            args = null;
        }
        if (cql != null) {
            note(ks + " via " + n + ": " + String.format(cql, "t") + " " + java.util.Arrays.toString(args));
            pairs.get(ks).write(sessions[n], ConsistencyLevel.ALL, cql, args);
            lastWrite.put(ks + "/" + pk, System.nanoTime());
        }
        read(ks, pk, false);
        read(ks, r.nextInt(KEYS + 20), false);
        if (r.nextInt(60) == 0) {
            maintenance(op);
        }
    }

    /** Reads a key through a random coordinator at a random level, from both tables. */
    private void read(String ks, int pk, boolean quiescent) {
        int n = node();
        ConsistencyLevel cl = LEVELS[r.nextInt(LEVELS.length)];
        read(ks, pk, n, cl, quiescent);
    }

    private void read(String ks, int pk, int n, ConsistencyLevel cl, boolean quiescent) {
        TwinTables t = pairs.get(ks);
        String cql = "SELECT pk, ck, v FROM %s WHERE pk = ?";
        long began = System.nanoTime();
        List<String> withIndex = TwinTables.read(
                sessions[n],
                SimpleStatement.newInstance(String.format(cql, t.indexed()), pk).setConsistencyLevel(cl));
        List<String> stock = TwinTables.read(
                sessions[n],
                SimpleStatement.newInstance(String.format(cql, t.twin()), pk).setConsistencyLevel(cl));
        compared++;
        if (withIndex.equals(stock)) {
            return;
        }
        Long written = lastWrite.get(ks + "/" + pk);
        long sinceWrite = written == null ? Long.MAX_VALUE : (began - written) / 1_000_000;
        String what = ks + " pk " + pk + " via node " + n + " at " + cl + ": with node filters " + withIndex
                + ", stock " + stock + ", " + sinceWrite + " ms after the key's last write";
        assertTrue(!quiescent, "at a quiescent point " + what);
        assertTrue(withIndex.isEmpty(), what + ": rows stock does not return");
        assertTrue(sinceWrite < STALENESS_MILLIS, what + ": missed a write older than S");
        staleMisses++;
        note("stale (allowed): " + what);
    }

    /** Nothing written for longer than S: every read through every coordinator must match. */
    private void quiescentPoint() throws Exception {
        Thread.sleep(STALENESS_MILLIS + 500);
        note("quiescent point");
        for (String ks : KEYSPACES) {
            for (int pk = 0; pk < KEYS + 10; pk++) {
                for (int n = 1; n <= nodes; n++) {
                    read(ks, pk, n, LEVELS[r.nextInt(LEVELS.length)], true);
                    quiescentReads++;
                }
            }
        }
    }

    /**
     * Writes while node {@code down} is down, to the keyspaces whose other replicas can take them
     * (RF 3 at QUORUM, RF 2 at ONE): its share comes back to it as hints, through its write path.
     * Nothing is read meanwhile.
     */
    private void hintedWrites(int down, int op) {
        int via = down % nodes + 1;
        for (int i = 0; i < 10; i++) {
            boolean rf3 = r.nextBoolean();
            String ks = rf3 ? "r3" : "r2";
            int pk = r.nextInt(KEYS);
            String cql = r.nextInt(3) == 0
                    ? "DELETE FROM %s WHERE pk = ?"
                    : "INSERT INTO %s (pk, ck, v) VALUES (?, 0, 'hinted')";
            note(ks + " via " + via + " (node " + down + " down): " + String.format(cql, "t") + " [" + pk + "]");
            pairs.get(ks).write(sessions[via], rf3 ? ConsistencyLevel.QUORUM : ConsistencyLevel.ONE, cql, pk);
            lastWrite.put(ks + "/" + pk, System.nanoTime());
        }
    }

    /**
     * Waits until every hint written has been delivered: until then a read at ONE may reach the
     * replica that has not received it, for the twin table as for the indexed one, and stock would
     * not be an oracle. {@code nodetool listpendinghints} alone is not enough: it lists hint files
     * only, and a hint spends up to ten seconds in memory (the hint buffer, then an open file)
     * before its file is listed; a write sent to a killed node before the others saw it down is
     * hinted only when it times out. So this also waits, on every node, until no hint is being
     * written and as many hints were delivered since the node started as it wrote.
     */
    private void awaitHintsDelivered() throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(120).toNanos();
        for (int n = 1; n <= nodes; n++) {
            while (!hintsDelivered(n)) {
                assertTrue(System.nanoTime() < deadline, "hints not delivered within 120 s");
                Thread.sleep(500);
            }
        }
        note("hints delivered");
    }

    private boolean hintsDelivered(int n) throws Exception {
        NodeJmx jmx = cluster.jmx(n);
        long written = jmx.count("org.apache.cassandra.metrics:type=Storage,name=TotalHints");
        long writing = jmx.count("org.apache.cassandra.metrics:type=Storage,name=TotalHintsInProgress");
        long delivered = jmx.count("org.apache.cassandra.metrics:type=HintsService,name=HintsSucceeded");
        return writing == 0
                && delivered >= written
                && cluster.nodetool(n, "listpendinghints").contains("does not have any pending hints");
    }

    private void maintenance(int op) throws Exception {
        String ks = KEYSPACES[r.nextInt(KEYSPACES.length)];
        int n = node();
        String[] kinds = {"flush", "flush", "compact", "compact", "kill"};
        String kind = kinds[r.nextInt(kinds.length)];
        note("op " + op + ": " + kind + " " + ks + " on node " + n);
        switch (kind) {
            case "flush" -> cluster.flush(n, ks);
            case "compact" -> cluster.compact(n, ks, "t", "t_twin");
            case "kill" -> {
                sessions[n].close();
                sessions[n] = null;
                cluster.kill(n);
                hintedWrites(n, op);
                cluster.startNode(n);
                sessions[n] = cluster.session(n);
                TwinTables.execute(
                        sessions[n], SimpleStatement.newInstance("SELECT release_version FROM system.local"));
                awaitHintsDelivered();
            }
            default -> throw new IllegalStateException(kind);
        }
    }
}
