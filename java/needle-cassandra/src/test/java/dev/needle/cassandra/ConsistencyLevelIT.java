package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.NodeJmx;
import dev.needle.testkit.TwinTables;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The scenario of the thesis' Fig. 4.3: a replica misses a delete. With RF 3 and hints off, node 3
 * is down while a partition is deleted at QUORUM, and comes back holding the old row. At QUORUM
 * and ALL the delete must win through any coordinator, with the index as without it; at ONE
 * Needle's answer must be one that stock Cassandra could give. A repair then streams the
 * tombstone to node 3, whose filters learn it from the streamed SSTable. Last, a fourth node
 * bootstraps and serves its ranges.
 */
class ConsistencyLevelIT {

    private static List<String> read(CqlSession s, String table, ConsistencyLevel cl) {
        ResultSet rs = s.execute(SimpleStatement.newInstance("SELECT v FROM ks." + table + " WHERE pk = 1")
                .setConsistencyLevel(cl));
        return rs.all().stream().map(r -> r.getString(0)).toList();
    }

    @Test
    void aReplicaThatMissedTheDeleteCannotResurrectTheRow() throws Exception {
        try (LocalCluster cluster = LocalCluster.start(3, "--yaml", "hinted_handoff_enabled=false")) {
            try (CqlSession s1 = cluster.session(1)) {
                s1.execute(
                        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}");
                for (String t : new String[] {"needle", "twin"}) {
                    s1.execute("CREATE TABLE ks." + t + " (pk int PRIMARY KEY, v text)");
                }
                s1.execute("CREATE CUSTOM INDEX ON ks.needle () USING 'dev.needle.cassandra.NeedleIndex'");
                for (String t : new String[] {"needle", "twin"}) {
                    s1.execute(SimpleStatement.newInstance("INSERT INTO ks." + t + " (pk, v) VALUES (1, 'old')")
                            .setConsistencyLevel(ConsistencyLevel.ALL));
                }
                cluster.stop(3);
                for (String t : new String[] {"needle", "twin"}) {
                    s1.execute(SimpleStatement.newInstance("DELETE FROM ks." + t + " WHERE pk = 1")
                            .setConsistencyLevel(ConsistencyLevel.QUORUM));
                }
                cluster.startNode(3);
                // Node 1 holds the tombstone: at ONE it answers empty, skipping the read.
                Lookups.assertSkipped(
                        cluster,
                        1,
                        "ks",
                        "needle",
                        "node 1 holds the tombstone",
                        () -> assertEquals(List.of(), read(s1, "needle", ConsistencyLevel.ONE)));
            }
            try (CqlSession s3 = cluster.session(3)) {
                // Node 3 missed the delete and holds live data: through it, Needle must not skip at ONE.
                Lookups.assertRead(
                        cluster,
                        3,
                        "ks",
                        "needle",
                        "the replica holding live data",
                        () -> read(s3, "needle", ConsistencyLevel.ONE));
                // Repair streams the tombstone to node 3: Needle learns it from the streamed SSTable
                // (its observer or its saved filter, then the partition deletions), and from then on
                // node 3 skips the read too.
                cluster.nodetool(3, "repair", "-full", "ks", "needle");
                Lookups.awaitSkipped(
                        cluster,
                        3,
                        "ks",
                        "needle",
                        "node 3 after the repair",
                        60,
                        () -> assertEquals(List.of(), read(s3, "needle", ConsistencyLevel.ONE)));
                // Above ONE the delete wins, exactly as without the index.
                for (ConsistencyLevel cl : new ConsistencyLevel[] {ConsistencyLevel.QUORUM, ConsistencyLevel.ALL}) {
                    assertEquals(read(s3, "twin", cl), read(s3, "needle", cl), cl.name());
                    assertEquals(List.of(), read(s3, "needle", cl), cl.name() + " resurrected a deleted row");
                }
            }
            // A fourth node bootstraps: it receives its ranges by streaming, whole SSTables with
            // their saved filters or rows written through the observer. Through it, every read
            // answers as the twin's, and deleted and absent keys it holds are skipped.
            TwinTables t = new TwinTables("ks.needle", "ks.twin");
            try (CqlSession s1 = cluster.session(1)) {
                for (int pk = 100; pk < 400; pk++) {
                    t.write(s1, ConsistencyLevel.ALL, "INSERT INTO %s (pk, v) VALUES (?, ?)", pk, "v" + pk);
                }
                for (int pk = 100; pk < 400; pk += 3) {
                    t.write(s1, ConsistencyLevel.ALL, "DELETE FROM %s WHERE pk = ?", pk);
                }
                for (int n = 1; n <= 3; n++) {
                    cluster.flush(n, "ks");
                }
            }
            int added = cluster.addNode();
            assertEquals(4, added);
            for (String table : new String[] {"needle", "twin"}) {
                assertTrue(
                        cluster.jmx(added)
                                        .gauge("org.apache.cassandra.metrics:type=Table,keyspace=ks,scope=" + table
                                                + ",name=LiveSSTableCount")
                                > 0,
                        "node 4 received no SSTable of ks." + table + " while bootstrapping");
            }
            cluster.jmx(added).awaitReady("ks", "needle");
            try (CqlSession s4 = cluster.session(added)) {
                NodeJmx.LookupCounts counts = cluster.jmx(added).lookups("ks", "needle", () -> {
                    for (int pk = 90; pk < 410; pk++) {
                        try {
                            t.compare(s4, ConsistencyLevel.ONE, "SELECT pk, v FROM %s WHERE pk = ?", pk);
                            t.compare(s4, ConsistencyLevel.QUORUM, "SELECT pk, v FROM %s WHERE pk = ?", pk);
                        } catch (AssertionError e) {
                            throw new AssertionError(
                                    e.getMessage() + "; node 4's Needle says:"
                                            + Lookups.explain(s4, "ks", "needle", String.valueOf(pk)),
                                    e);
                        }
                    }
                });
                assertTrue(counts.skipped() > 50, "the new node skipped " + counts + " of its reads");
            }
        }
    }
}
