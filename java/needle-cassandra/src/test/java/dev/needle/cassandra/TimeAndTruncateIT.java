package dev.needle.cassandra;

import static com.datastax.oss.driver.api.core.ConsistencyLevel.ONE;
import static org.junit.jupiter.api.Assertions.assertEquals;

import com.datastax.oss.driver.api.core.CqlSession;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.TwinTables;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Reads whose answer depends on time or on a truncation: a client-supplied {@code now_in_seconds}
 * (protocol v5) earlier than a TTL's expiry, and TRUNCATE in a keyspace without durable writes,
 * whose memtables are dropped without a flush. Every read is compared with a twin table.
 */
class TimeAndTruncateIT {
    private static LocalCluster cluster;
    private static CqlSession session;

    @BeforeAll
    static void up() throws Exception {
        cluster = LocalCluster.start(1);
        session = cluster.session(1);
        session.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        session.execute("CREATE KEYSPACE nd WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1} "
                + "AND durable_writes = false");
    }

    @AfterAll
    static void down() {
        if (cluster != null) {
            cluster.close(); // and the sessions it opened
        }
    }

    private static TwinTables twins(String keyspace, String name) {
        TwinTables t = new TwinTables(keyspace + "." + name, keyspace + "." + name + "_twin");
        t.schema(session, "CREATE TABLE %s (k int PRIMARY KEY, v int)");
        session.execute(
                "CREATE CUSTOM INDEX ON " + keyspace + "." + name + " () USING 'dev.needle.cassandra.NeedleIndex'");
        return t;
    }

    @Test
    void aReadAtAClientSetTimeBeforeATtlExpiredSeesTheRow() throws Exception {
        TwinTables t = twins("ks", "ttl");
        t.write(session, ONE, "INSERT INTO %s (k, v) VALUES (1, 1) USING TTL 2");
        t.write(session, ONE, "INSERT INTO %s (k, v) VALUES (2, 2) USING TTL 2");
        t.write(session, ONE, "INSERT INTO %s (k, v) VALUES (3, 3)");
        Thread.sleep(3_000);
        cluster.flush(1, "ks");
        t.write(session, ONE, "INSERT INTO %s (k, v) VALUES (2, 2) USING TTL 2");
        Thread.sleep(4_000);
        int past = (int) (System.currentTimeMillis() / 1000) - 60;
        for (int k = 1; k <= 4; k++) {
            List<String> rows =
                    t.compare(session, ONE, st -> st.setNowInSeconds(past), "SELECT k, v FROM %s WHERE k = ?", k);
            assertEquals(k <= 3 ? 1 : 0, rows.size(), "key " + k + " at now_in_seconds 60 s ago");
            t.compare(session, ONE, "SELECT k, v FROM %s WHERE k = ?", k);
        }
        // The same after a compaction, and for a write whose own now lies in the past.
        cluster.compact(1, "ks", "ttl", "ttl_twin");
        t.write(session, ONE, st -> st.setNowInSeconds(past), "INSERT INTO %s (k, v) VALUES (5, 5) USING TTL 10");
        for (int k = 1; k <= 5; k++) {
            t.compare(session, ONE, st -> st.setNowInSeconds(past), "SELECT k, v FROM %s WHERE k = ?", k);
            t.compare(session, ONE, "SELECT k, v FROM %s WHERE k = ?", k);
        }
        cluster.flush(1, "ks");
        for (int k = 1; k <= 5; k++) {
            t.compare(session, ONE, st -> st.setNowInSeconds(past), "SELECT k, v FROM %s WHERE k = ?", k);
            t.compare(session, ONE, "SELECT k, v FROM %s WHERE k = ?", k);
        }
    }

    @Test
    void truncateWithoutDurableWritesForgetsTheDroppedMemtable() throws Exception {
        TwinTables t = twins("nd", "t");
        for (int k = 1; k <= 9; k++) {
            t.write(session, ONE, "INSERT INTO %s (k, v) VALUES (?, ?) USING TIMESTAMP 1000", k, k);
        }
        t.write(session, ONE, "DELETE FROM %s USING TIMESTAMP 5000 WHERE k = 1");
        t.write(session, ONE, "DELETE FROM %s USING TIMESTAMP 5000 WHERE k = 2");
        cluster.flush(1, "nd");
        t.write(session, ONE, "DELETE FROM %s USING TIMESTAMP 5000 WHERE k = 3");
        t.write(session, ONE, "DELETE FROM %s USING TIMESTAMP 5000 WHERE k = 4");
        t.write(session, ONE, "INSERT INTO %s (k, v) VALUES (5, 5) USING TIMESTAMP 6000");
        t.schema(session, "TRUNCATE %s");
        for (int k = 1; k <= 6; k++) {
            t.write(session, ONE, "INSERT INTO %s (k, v) VALUES (?, ?) USING TIMESTAMP 3000", k, 100 + k);
        }
        for (int k = 0; k <= 10; k++) {
            List<String> rows = t.compare(session, ONE, "SELECT k, v FROM %s WHERE k = ?", k);
            assertEquals(k >= 1 && k <= 6 ? 1 : 0, rows.size(), "key " + k);
        }
        cluster.flush(1, "nd");
        for (int k = 0; k <= 10; k++) {
            t.compare(session, ONE, "SELECT k, v FROM %s WHERE k = ?", k);
        }
    }

    @Test
    void truncateWithDurableWrites() throws Exception {
        TwinTables t = twins("ks", "durable");
        for (int k = 1; k <= 9; k++) {
            t.write(session, ONE, "INSERT INTO %s (k, v) VALUES (?, ?) USING TIMESTAMP 1000", k, k);
        }
        t.write(session, ONE, "DELETE FROM %s USING TIMESTAMP 5000 WHERE k = 1");
        cluster.flush(1, "ks");
        t.write(session, ONE, "DELETE FROM %s USING TIMESTAMP 5000 WHERE k = 3");
        t.schema(session, "TRUNCATE %s");
        for (int k = 1; k <= 6; k++) {
            t.write(session, ONE, "INSERT INTO %s (k, v) VALUES (?, ?) USING TIMESTAMP 3000", k, 100 + k);
        }
        for (int k = 0; k <= 10; k++) {
            List<String> rows = t.compare(session, ONE, "SELECT k, v FROM %s WHERE k = ?", k);
            assertEquals(k >= 1 && k <= 6 ? 1 : 0, rows.size(), "key " + k);
        }
    }
}
