package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.ExecutionInfo;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.cql.TraceEvent;
import com.datastax.oss.driver.api.core.servererrors.QueryValidationException;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.NodeJmx;
import java.util.List;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/** One real node: reads of absent and deleted partitions are skipped, traced and counted; options are checked. */
class SkipReadIT {
    private static LocalCluster cluster;
    private static CqlSession session;

    @BeforeAll
    static void up() throws Exception {
        cluster = LocalCluster.start(1);
        session = cluster.session(1);
        session.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
        session.execute("CREATE TABLE ks.t (pk int, ck int, v text, PRIMARY KEY (pk, ck))");
        session.execute("CREATE CUSTOM INDEX t_needle ON ks.t () USING 'dev.needle.cassandra.NeedleIndex' "
                + "WITH OPTIONS = {'filter': 'cuckoo', 'fp_rate': '0.001'}");
    }

    @AfterAll
    static void down() {
        if (cluster != null) {
            cluster.close(); // and the sessions it opened
        }
    }

    private static ResultSet select(int pk, boolean trace) {
        return session.execute(SimpleStatement.newInstance("SELECT * FROM ks.t WHERE pk = ?", pk)
                .setConsistencyLevel(ConsistencyLevel.ONE)
                .setTracing(trace));
    }

    private static boolean skippedPerTrace(ResultSet rs) {
        ExecutionInfo info = rs.getExecutionInfo();
        List<TraceEvent> events = info.getQueryTrace().getEvents();
        return events.stream().anyMatch(e -> PointRead.TRACE_SKIPPED.equals(e.getActivity()));
    }

    @Test
    void absentAndDeletedPartitionsAreSkippedLiveOnesRead() throws Exception {
        for (int pk = 0; pk < 100; pk++) {
            for (int ck = 0; ck < 3; ck++) {
                session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, ?)", pk, ck, "v" + pk + "-" + ck);
            }
        }
        for (int pk = 0; pk < 20; pk++) {
            session.execute("DELETE FROM ks.t WHERE pk = ?", pk);
        }
        // In the memtable, after a flush, and after a compaction: the same answers.
        for (String phase : new String[] {"memtable", "flushed", "compacted"}) {
            if (phase.equals("flushed")) {
                cluster.flush(1, "ks", "t");
            } else if (phase.equals("compacted")) {
                cluster.compact(1, "ks", "t");
            }
            Lookups.assertSkipped(
                    cluster,
                    1,
                    "ks",
                    "t",
                    phase + ", deleted partition",
                    () -> assertEquals(0, select(5, false).all().size()));
            Lookups.assertSkipped(
                    cluster,
                    1,
                    "ks",
                    "t",
                    phase + ", never-written partition",
                    () -> assertEquals(0, select(5000, false).all().size()));
            Lookups.assertRead(
                    cluster,
                    1,
                    "ks",
                    "t",
                    phase + ", live partition",
                    () -> assertEquals(3, select(50, false).all().size()));
        }
        assertTrue(skippedPerTrace(select(5000, true)), "a skipped read carries its trace event");
        assertTrue(cluster.jmx(1).metric("ks", "t", "FilterBytes") > 0);
    }

    @Test
    void writesAfterADeleteBringThePartitionBack() throws Exception {
        session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (7000, 1, 'a')");
        session.execute("DELETE FROM ks.t WHERE pk = 7000");
        assertEquals(0, select(7000, false).all().size());
        cluster.flush(1, "ks", "t");
        session.execute("INSERT INTO ks.t (pk, ck, v) VALUES (7000, 2, 'b')");
        assertEquals(1, select(7000, false).all().size());
        cluster.flush(1, "ks", "t");
        assertEquals(1, select(7000, false).all().size());
    }

    @Test
    void aggregatesAndHigherConsistencyLevelsAreNotSkipped() throws Exception {
        long count = session.execute(SimpleStatement.newInstance("SELECT count(*) FROM ks.t WHERE pk = 99999")
                        .setConsistencyLevel(ConsistencyLevel.ONE))
                .one()
                .getLong(0);
        assertEquals(0, count, "an aggregate over an absent partition still returns its row");
        NodeJmx.LookupCounts quorum = cluster.jmx(1)
                .lookups(
                        "ks",
                        "t",
                        () -> session.execute(SimpleStatement.newInstance("SELECT * FROM ks.t WHERE pk = 99998")
                                .setConsistencyLevel(ConsistencyLevel.QUORUM)));
        assertEquals(new NodeJmx.LookupCounts(0, 1), quorum, "a QUORUM read was skipped");
    }

    @Test
    void badOptionsAreRejectedClearly() {
        session.execute("CREATE TABLE IF NOT EXISTS ks.other (pk int PRIMARY KEY, v int)");
        QueryValidationException e = assertThrows(
                QueryValidationException.class,
                () -> session.execute(
                        "CREATE CUSTOM INDEX ON ks.other () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = {'filter': 'quotient'}"));
        assertTrue(e.getMessage().contains("use 'cuckoo'"), e.getMessage());
        e = assertThrows(
                QueryValidationException.class,
                () -> session.execute(
                        "CREATE CUSTOM INDEX ON ks.other () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = {'fp_rate': '2'}"));
        assertTrue(e.getMessage().contains("fp_rate"), e.getMessage());
        e = assertThrows(
                QueryValidationException.class,
                () -> session.execute(
                        "CREATE CUSTOM INDEX ON ks.other () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = {'fp_rat': '0.01'}"));
        assertTrue(e.getMessage().contains("fp_rat"), e.getMessage());
    }

    @Test
    void indexCanBeDroppedAndRecreatedOnATableWithData() throws Exception {
        session.execute("CREATE TABLE ks.again (pk int PRIMARY KEY, v int)");
        for (int i = 0; i < 50; i++) {
            session.execute("INSERT INTO ks.again (pk, v) VALUES (?, ?)", i, i);
        }
        session.execute("CREATE CUSTOM INDEX again_needle ON ks.again () USING 'dev.needle.cassandra.NeedleIndex'");
        waitReady("again");
        for (int i = 0; i < 50; i++) {
            assertNotNull(
                    session.execute(SimpleStatement.newInstance("SELECT * FROM ks.again WHERE pk = ?", i)
                                    .setConsistencyLevel(ConsistencyLevel.ONE))
                            .one(),
                    "row " + i + " written before the index was lost");
        }
        session.execute("DROP INDEX ks.again_needle");
        session.execute("CREATE CUSTOM INDEX again_needle ON ks.again () USING 'dev.needle.cassandra.NeedleIndex' "
                + "WITH OPTIONS = {'filter': 'bloom'}");
        waitReady("again");
        for (int i = 0; i < 50; i++) {
            assertNotNull(session.execute(SimpleStatement.newInstance("SELECT * FROM ks.again WHERE pk = ?", i)
                            .setConsistencyLevel(ConsistencyLevel.ONE))
                    .one());
        }
        Lookups.assertSkipped(
                cluster,
                1,
                "ks",
                "again",
                "a never-written key after the re-creation",
                () -> session.execute(SimpleStatement.newInstance("SELECT * FROM ks.again WHERE pk = 777")
                        .setConsistencyLevel(ConsistencyLevel.ONE)));
    }

    private static void waitReady(String table) throws Exception {
        cluster.jmx(1).awaitReady("ks", table);
    }
}
