package dev.needle.cassandra;

import dev.needle.testkit.LocalCluster;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import java.util.List;
import org.junit.jupiter.api.Test;

/**
 * The scenario of the thesis' Fig. 4.3: a replica misses a delete. With RF 3 and hints off, node 3
 * is down while a partition is deleted at QUORUM, and comes back holding the old row. At QUORUM
 * and ALL the delete must win through any coordinator, with the index as without it; at ONE
 * Needle's answer must be one that stock Cassandra could give. A repair then streams the
 * tombstone to node 3, whose filters learn it from the streamed SSTable.
 */
class ConsistencyLevelIT {

    private static List<String> read(CqlSession s, String table, ConsistencyLevel cl) {
        ResultSet rs = s.execute(SimpleStatement.newInstance("SELECT v FROM ks." + table + " WHERE pk = 1").setConsistencyLevel(cl));
        return rs.all().stream().map(r -> r.getString(0)).toList();
    }

    @Test
    void aReplicaThatMissedTheDeleteCannotResurrectTheRow() throws Exception {
        try (LocalCluster cluster = LocalCluster.start(3, "--yaml", "hinted_handoff_enabled=false")) {
            try (CqlSession s1 = cluster.session(1)) {
                s1.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 3}");
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
                Lookups.assertSkipped(cluster, 1, "ks", "needle", "node 1 holds the tombstone",
                        () -> assertEquals(List.of(), read(s1, "needle", ConsistencyLevel.ONE)));
            }
            try (CqlSession s3 = cluster.session(3)) {
                // Node 3 missed the delete and holds live data: through it, Needle must not skip at ONE.
                Lookups.assertRead(cluster, 3, "ks", "needle", "the replica holding live data",
                        () -> read(s3, "needle", ConsistencyLevel.ONE));
                // Repair streams the tombstone to node 3: Needle learns it from the streamed SSTable
                // (its observer or its saved filter, then the partition deletions), and from then on
                // node 3 skips the read too.
                cluster.nodetool(3, "repair", "-full", "ks", "needle");
                Lookups.awaitSkipped(cluster, 3, "ks", "needle", "node 3 after the repair", 60,
                        () -> assertEquals(List.of(), read(s3, "needle", ConsistencyLevel.ONE)));
                // Above ONE the delete wins, exactly as without the index.
                for (ConsistencyLevel cl : new ConsistencyLevel[] {ConsistencyLevel.QUORUM, ConsistencyLevel.ALL}) {
                    assertEquals(read(s3, "twin", cl), read(s3, "needle", cl), cl.name());
                    assertEquals(List.of(), read(s3, "needle", cl), cl.name() + " resurrected a deleted row");
                }
            }
        }
    }
}
