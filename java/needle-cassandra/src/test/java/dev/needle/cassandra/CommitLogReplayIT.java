package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.TwinTables;
import java.nio.file.Files;
import java.util.List;
import java.util.SplittableRandom;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;

/**
 * Commit-log replay applies the same mutations to a table with a Needle index as to its twin
 * without: with {@code commitlog_sync: batch} no acknowledged write can be lost to a kill -9, so
 * after each crash both tables must hold exactly what was written, and Needle's answers must be
 * the data's. (With the default periodic sync, a kill -9 loses the writes of the last sync period,
 * so the second of two writes that straddle the loss can vanish: twin tables written one after the
 * other then legitimately differ, in stock Cassandra as with the index.)
 */
class CommitLogReplayIT {
    private static final int KEYS = 500;
    private static final Pattern REPLAYED = Pattern.compile("Log replay complete, (\\d+) replayed mutations");

    @Test
    void replayAfterKillMinusNineAppliesEveryWriteToBothTables() throws Exception {
        long seed = Long.getLong("needle.it.seed", System.nanoTime());
        SplittableRandom r = new SplittableRandom(seed);
        try (LocalCluster cluster =
                LocalCluster.start(1, "--yaml", "commitlog_sync=batch", "--yaml", "commitlog_sync_period=0ms")) {
            TwinTables t = new TwinTables("ks.t", "ks.t_twin");
            try (CqlSession s = cluster.session(1)) {
                s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
                t.schema(s, "CREATE TABLE %s (pk int, ck int, v text, s text static, PRIMARY KEY (pk, ck))");
                s.execute("CREATE CUSTOM INDEX ON ks.t () USING 'dev.needle.cassandra.NeedleIndex'");
                int written = 0;
                for (int round = 0; round < 3; round++) {
                    // Unflushed writes of every kind, then a crash in the middle of nothing.
                    for (int i = 0; i < 1_500; i++) {
                        written += write(t, s, r, round * 10_000 + i);
                    }
                    if (round == 1) {
                        cluster.flush(1, "ks"); // some data in SSTables, the rest in the commit log
                        for (int i = 0; i < 500; i++) {
                            written += write(t, s, r, round * 10_000 + 5_000 + i);
                        }
                    }
                    cluster.kill(1);
                    cluster.startNode(1);
                    TwinTables.execute(s, SimpleStatement.newInstance("SELECT release_version FROM system.local"));
                    int nowSec = (int) (System.currentTimeMillis() / 1000);
                    for (int pk = 0; pk < KEYS + 20; pk++) {
                        // The data (read at ALL, never skipped), then what Needle answers at ONE.
                        List<String> data = t.compare(
                                s,
                                ConsistencyLevel.ALL,
                                st -> st.setNowInSeconds(nowSec),
                                "SELECT pk, ck, v, s FROM %s WHERE pk = ?",
                                pk);
                        assertEquals(
                                data,
                                t.compare(
                                        s,
                                        ConsistencyLevel.ONE,
                                        st -> st.setNowInSeconds(nowSec),
                                        "SELECT pk, ck, v, s FROM %s WHERE pk = ?",
                                        pk),
                                "key " + pk + " after crash " + (round + 1));
                    }
                    assertEquals(
                            0,
                            cluster.jmx(1).metric("ks", "t", "Failures"),
                            "Needle caught errors; see the node's log");
                }
                String log = Files.readString(cluster.nodeDir(1).resolve("logs").resolve("system.log"));
                Matcher m = REPLAYED.matcher(log);
                long replayed = 0;
                while (m.find()) {
                    replayed += Long.parseLong(m.group(1));
                }
                System.out.println("CommitLogReplayIT: " + written + " writes to each table, " + replayed
                        + " mutations replayed over 3 crashes, " + t.readsCompared() + " reads compared, seed " + seed);
                assertTrue(
                        replayed >= written,
                        "replayed " + replayed + " mutations, fewer than the " + written
                                + " writes to each table that no flush covered");
            }
        }
    }

    /** One write of a random kind to both tables; returns 1. */
    private static int write(TwinTables t, CqlSession s, SplittableRandom r, int op) {
        int pk = r.nextInt(KEYS);
        int ck = r.nextInt(6);
        int nowSec = (int) (System.currentTimeMillis() / 1000);
        int kind = r.nextInt(10);
        String cql;
        Object[] args;
        if (kind < 4) {
            cql = "INSERT INTO %s (pk, ck, v) VALUES (?, ?, ?)";
            args = new Object[] {pk, ck, "v" + op};
        } else if (kind < 5) {
            cql = "INSERT INTO %s (pk, ck, v) VALUES (?, ?, ?) USING TTL 3600";
            args = new Object[] {pk, ck, "t" + op};
        } else if (kind < 6) {
            cql = "UPDATE %s SET s = ? WHERE pk = ?";
            args = new Object[] {"s" + op, pk};
        } else if (kind < 8) {
            cql = "DELETE FROM %s WHERE pk = ?";
            args = new Object[] {pk};
        } else if (kind < 9) {
            cql = "DELETE FROM %s WHERE pk = ? AND ck = ?";
            args = new Object[] {pk, ck};
        } else {
            cql = "DELETE FROM %s WHERE pk = ? AND ck >= ? AND ck < ?";
            args = new Object[] {pk, ck, ck + 2};
        }
        t.write(s, ConsistencyLevel.ONE, st -> st.setNowInSeconds(nowSec), cql, args);
        return 1;
    }
}
