package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.needle.testkit.LocalCluster;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import org.junit.jupiter.api.Test;

/**
 * Randomized operations against real clusters, checked against ground truth: every step writes
 * the same thing to a table with a Needle index and to a twin without one, and then reads a
 * sample of live, deleted and never-written partitions from both at consistency ONE. Both must
 * return exactly what the model says. Flushes, compactions, restarts and kill -9 are part of the
 * sequence. A failure prints the seed; {@code -Dneedle.it.seed=S -Dneedle.it.ops=N} replays it.
 */
class ModelBasedIT {
    private static final int KEYS = 400;
    private static final int ROWS = 8;
    private static final int TTL_SECONDS = 2;

    @Test
    void oneNode() throws Exception {
        run(1, Integer.getInteger("needle.it.ops", 4_000));
    }

    @Test
    void threeNodes() throws Exception {
        run(3, Integer.getInteger("needle.it.ops3", 1_200));
    }

    /** Ground truth: per partition, its static value and rows, each with an expiry (0 = none). */
    private static final class Partition {
        String staticValue;
        long staticExpiry;
        final TreeMap<Integer, String> rows = new TreeMap<>();
        final Map<Integer, Long> expiry = new HashMap<>();
    }

    private void run(int nodes, int ops) throws Exception {
        long seed = Long.getLong("needle.it.seed", System.nanoTime());
        System.out.println("ModelBasedIT " + nodes + " node(s), " + ops + " operations, seed " + seed);
        SplittableRandom r = new SplittableRandom(seed);
        Map<Integer, Partition> model = new HashMap<>();
        try (LocalCluster cluster = LocalCluster.start(nodes)) {
            CqlSession[] sessions = new CqlSession[nodes + 1];
            try {
                for (int n = 1; n <= nodes; n++) {
                    sessions[n] = cluster.session(n);
                }
                CqlSession s = sessions[1];
                s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': "
                        + nodes + "}");
                for (String t : new String[] {"needle", "twin"}) {
                    s.execute(SimpleStatement.newInstance("CREATE TABLE ks." + t
                                    + " (pk int, ck int, v text, s text static, PRIMARY KEY (pk, ck))")
                            .setTimeout(java.time.Duration.ofSeconds(60)));
                }
                s.execute("CREATE CUSTOM INDEX ON ks.needle () USING 'dev.needle.cassandra.NeedleIndex'");
                ConsistencyLevel writeCl = ConsistencyLevel.ALL;
                long skippedBefore = 0;
                int checks = 0;
                for (int op = 0; op < ops; op++) {
                    int pk = r.nextInt(KEYS);
                    int kind = r.nextInt(100);
                    String w = null;
                    List<Object> args = new ArrayList<>();
                    long now = System.currentTimeMillis();
                    Partition p = model.computeIfAbsent(pk, k -> new Partition());
                    if (kind < 40) {
                        int ck = r.nextInt(ROWS);
                        String v = "v" + op;
                        w = "INSERT INTO ks.%s (pk, ck, v) VALUES (?, ?, ?)";
                        args = List.of(pk, ck, v);
                        p.rows.put(ck, v);
                        p.expiry.put(ck, 0L);
                    } else if (kind < 45) {
                        int ck = r.nextInt(ROWS);
                        String v = "t" + op;
                        w = "INSERT INTO ks.%s (pk, ck, v) VALUES (?, ?, ?) USING TTL " + TTL_SECONDS;
                        args = List.of(pk, ck, v);
                        p.rows.put(ck, v);
                        p.expiry.put(ck, now + TTL_SECONDS * 1000L);
                    } else if (kind < 48) {
                        String v = "s" + op;
                        w = "UPDATE ks.%s SET s = ? WHERE pk = ?";
                        args = List.of(v, pk);
                        p.staticValue = v;
                        p.staticExpiry = 0;
                    } else if (kind < 60) {
                        w = "DELETE FROM ks.%s WHERE pk = ?";
                        args = List.of(pk);
                        model.put(pk, new Partition());
                    } else if (kind < 74) {
                        int ck = r.nextInt(ROWS);
                        w = "DELETE FROM ks.%s WHERE pk = ? AND ck = ?";
                        args = List.of(pk, ck);
                        p.rows.remove(ck);
                        p.expiry.remove(ck);
                    } else if (kind < 80) {
                        int from = r.nextInt(ROWS);
                        int to = from + 1 + r.nextInt(3);
                        w = "DELETE FROM ks.%s WHERE pk = ? AND ck >= ? AND ck < ?";
                        args = List.of(pk, from, to);
                        for (int ck = from; ck < to; ck++) {
                            p.rows.remove(ck);
                            p.expiry.remove(ck);
                        }
                    } else if (kind < 83) {
                        w = "DELETE s FROM ks.%s WHERE pk = ?";
                        args = List.of(pk);
                        p.staticValue = null;
                    }
                    if (w != null) {
                        for (String t : new String[] {"needle", "twin"}) {
                            execute(
                                    s,
                                    SimpleStatement.newInstance(String.format(w, t), args.toArray())
                                            .setConsistencyLevel(writeCl));
                        }
                    }
                    // Maintenance and failures, at points that depend on the seed.
                    if (op > 0 && op % 400 == 0) {
                        cluster.flush(1 + r.nextInt(nodes), "ks", "needle");
                    }
                    if (op > 0 && op % 2_500 == 0) {
                        cluster.compact(1 + r.nextInt(nodes), "ks", "needle");
                    }
                    if (op > 0 && op % (ops / 3 + 1) == 0) {
                        int victim = nodes == 1 ? 1 : 2 + r.nextInt(nodes - 1);
                        boolean crash = r.nextBoolean();
                        System.out.println("op " + op + ": " + (crash ? "kill -9" : "restart") + " node " + victim);
                        if (nodes > 1) {
                            sessions[victim].close();
                            sessions[victim] = null;
                        }
                        if (crash) {
                            cluster.kill(victim);
                        } else {
                            cluster.stop(victim);
                        }
                        if (nodes > 1) {
                            // With a replica down, only reads: every live replica keeps every write.
                            for (int i = 0; i < 100; i++) {
                                checks += check(sessions, nodes, model, r, r.nextInt(KEYS + 50));
                            }
                        }
                        cluster.startNode(victim);
                        if (nodes > 1) {
                            sessions[victim] = cluster.session(victim);
                        }
                        waitUntilAnswering(sessions[nodes > 1 ? victim : 1]);
                    }
                    checks += check(sessions, nodes, model, r, pk);
                    for (int i = 0; i < 2; i++) {
                        checks += check(sessions, nodes, model, r, r.nextInt(KEYS + 50)); // some never written
                    }
                }
                long skipped = 0;
                for (int n = 1; n <= nodes; n++) {
                    skipped += cluster.metric(n, "ks", "needle", "LookupsSkipped");
                }
                System.out.println("ModelBasedIT " + nodes + " node(s): " + ops + " operations, " + checks
                        + " partition reads compared, " + skipped + " reads skipped by Needle");
                assertTrue(
                        skipped > skippedBefore + checks / 20,
                        "Needle skipped only " + skipped + " of " + checks + " reads");
            } finally {
                for (CqlSession cs : sessions) {
                    if (cs != null) {
                        cs.close();
                    }
                }
            }
        } catch (AssertionError e) {
            throw new AssertionError("seed " + seed + ": " + e.getMessage(), e);
        }
    }

    /** Reads one partition from both tables at ONE through a random live coordinator; compares with the model. */
    private static int check(
            CqlSession[] sessions, int nodes, Map<Integer, Partition> model, SplittableRandom r, int pk) {
        int nowInSeconds = (int) (System.currentTimeMillis() / 1000);
        long now = nowInSeconds
                * 1000L; // expiries within 1.5 s of it are not judged (client and server clocks round apart)
        Partition p = model.get(pk);
        List<String> expected = new ArrayList<>();
        if (p != null) {
            boolean uncertain = p.staticExpiry != 0 && Math.abs(p.staticExpiry - now) < 1500;
            for (Map.Entry<Integer, Long> e : p.expiry.entrySet()) {
                uncertain |= e.getValue() != 0 && Math.abs(e.getValue() - now) < 1500;
            }
            if (uncertain) {
                return 0; // a TTL expires about now: either answer is right
            }
            boolean anyRow = false;
            for (Map.Entry<Integer, String> e : p.rows.entrySet()) {
                long exp = p.expiry.getOrDefault(e.getKey(), 0L);
                if (exp == 0 || exp > now) {
                    expected.add(e.getKey() + "=" + e.getValue() + "|" + p.staticValue);
                    anyRow = true;
                }
            }
            if (!anyRow && p.staticValue != null) {
                expected.add("null=null|" + p.staticValue); // a partition with only its static row
            }
        }
        CqlSession coordinator = null;
        while (coordinator == null) {
            coordinator = sessions[1 + r.nextInt(nodes)];
        }
        for (String t : new String[] {"needle", "twin"}) {
            List<String> got = new ArrayList<>();
            // Read at the model's "now": TTLs are judged at that second however late a retried read runs.
            for (Row row : execute(
                            coordinator,
                            SimpleStatement.newInstance("SELECT ck, v, s FROM ks." + t + " WHERE pk = ?", pk)
                                    .setConsistencyLevel(ConsistencyLevel.ONE)
                                    .setNowInSeconds(nowInSeconds))
                    .all()) {
                got.add((row.isNull(0) ? "null" : String.valueOf(row.getInt(0))) + "=" + row.getString(1) + "|"
                        + row.getString(2));
            }
            assertEquals(expected, got, t + " table, partition " + pk);
        }
        return 1;
    }

    private static com.datastax.oss.driver.api.core.cql.ResultSet execute(CqlSession s, SimpleStatement st) {
        DriverException last = null;
        for (int attempt = 0; attempt < 20; attempt++) {
            try {
                return s.execute(st);
            } catch (DriverException e) {
                last = e; // a node just restarted: retry a while (every statement here is idempotent)
                try {
                    Thread.sleep(500);
                } catch (InterruptedException ie) {
                    Thread.currentThread().interrupt();
                    throw e;
                }
            }
        }
        throw last;
    }

    private static void waitUntilAnswering(CqlSession s) {
        execute(s, SimpleStatement.newInstance("SELECT release_version FROM system.local"));
    }
}
