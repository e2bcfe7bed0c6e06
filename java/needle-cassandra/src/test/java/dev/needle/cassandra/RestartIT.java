package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.needle.testkit.LocalCluster;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Filters across restarts, crashes and damaged files, and feedback removal after row-by-row
 * deletes: answers stay exact, and skipping resumes without rebuilding what was saved.
 */
class RestartIT {

    private static ResultSet select(CqlSession s, int pk) {
        return s.execute(SimpleStatement.newInstance("SELECT * FROM ks.t WHERE pk = ?", pk)
                .setConsistencyLevel(ConsistencyLevel.ONE));
    }

    private static void waitFor(LocalCluster c, String metric, long atLeast) throws Exception {
        c.jmx(1).awaitMetric("ks", "t", metric, v -> v >= atLeast, java.time.Duration.ofMinutes(1));
    }

    @Test
    void filtersSurviveRestartsCrashesAndDamage() throws Exception {
        try (LocalCluster cluster = LocalCluster.start(1)) {
            try (CqlSession s = cluster.session(1)) {
                s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
                s.execute("CREATE TABLE ks.t (pk int, ck int, v text, PRIMARY KEY (pk, ck))");
                s.execute("CREATE CUSTOM INDEX ON ks.t () USING 'dev.needle.cassandra.NeedleIndex'");
                for (int pk = 0; pk < 200; pk++) {
                    for (int ck = 0; ck < 3; ck++) {
                        s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (?, ?, 'x')", pk, ck);
                    }
                }
                cluster.flush(1, "ks", "t");
                for (int pk = 0; pk < 50; pk++) {
                    s.execute("DELETE FROM ks.t WHERE pk = ?", pk);
                }
                for (int pk = 100; pk < 110; pk++) {
                    for (int ck = 0; ck < 3; ck++) {
                        s.execute("DELETE FROM ks.t WHERE pk = ? AND ck = ?", pk, ck); // row by row
                    }
                }
                cluster.flush(1, "ks", "t");

                // Row-by-row deletes are learned from the first read that finds nothing.
                Lookups.assertRead(
                        cluster,
                        1,
                        "ks",
                        "t",
                        "row deletes are not known before a read proves them",
                        () -> assertEquals(0, select(s, 105).all().size()));
                waitFor(cluster, "FeedbackRemovals", 1);
                Lookups.assertSkipped(
                        cluster,
                        1,
                        "ks",
                        "t",
                        "the proven-dead partition",
                        () -> assertEquals(0, select(s, 105).all().size()));
                s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (105, 9, 'back')");
                assertEquals(1, select(s, 105).all().size(), "a write after the proof must be visible");
            }

            // Graceful restart: saved filters are loaded, none rebuilt.
            cluster.restart(1);
            waitFor(cluster, "Ready", 1);
            assertTrue(cluster.jmx(1).metric("ks", "t", "SSTablesLoaded") >= 1);
            assertEquals(0, cluster.jmx(1).metric("ks", "t", "SSTablesScanned"));
            try (CqlSession s = cluster.session(1)) {
                Lookups.assertSkipped(
                        cluster,
                        1,
                        "ks",
                        "t",
                        "a deleted partition after a restart",
                        () -> assertEquals(0, select(s, 7).all().size()));
                assertEquals(3, select(s, 150).all().size());
                assertEquals(1, select(s, 105).all().size());
                // Unflushed writes and deletes, then a crash: the commit log brings both back.
                for (int ck = 0; ck < 3; ck++) {
                    s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (300, ?, 'y')", ck);
                    s.execute("INSERT INTO ks.t (pk, ck, v) VALUES (301, ?, 'y')", ck);
                }
                s.execute("DELETE FROM ks.t WHERE pk = 301");
                s.execute("DELETE FROM ks.t WHERE pk = 150");
            }
            cluster.kill(1);
            cluster.startNode(1);
            waitFor(cluster, "Ready", 1);
            try (CqlSession s = cluster.session(1)) {
                assertEquals(3, select(s, 300).all().size(), "write lost across kill -9");
                Lookups.assertSkipped(
                        cluster,
                        1,
                        "ks",
                        "t",
                        "a replayed delete",
                        () -> assertEquals(0, select(s, 301).all().size()));
                assertEquals(0, select(s, 150).all().size());
                assertEquals(3, select(s, 160).all().size());
            }

            // A damaged filter file is rebuilt from its SSTable.
            cluster.stop(1);
            List<Path> files;
            try (Stream<Path> walk = Files.walk(cluster.dir())) {
                files = walk.filter(p -> p.getFileName().toString().contains("-Needle+"))
                        .toList();
            }
            assertFalse(files.isEmpty(), "no saved filter under " + cluster.dir());
            for (Path f : files) {
                byte[] b = Files.readAllBytes(f);
                b[b.length / 2] ^= 0x5A;
                Files.write(f, b);
            }
            cluster.startNode(1);
            waitFor(cluster, "Ready", 1);
            assertTrue(cluster.jmx(1).metric("ks", "t", "SSTablesScanned") >= files.size());
            try (CqlSession s = cluster.session(1)) {
                Lookups.assertSkipped(
                        cluster,
                        1,
                        "ks",
                        "t",
                        "a deleted partition after the rebuild",
                        () -> assertEquals(0, select(s, 7).all().size()));
                for (int pk = 150; pk < 200; pk++) {
                    assertEquals(pk == 150 ? 0 : 3, select(s, pk).all().size(), "partition " + pk);
                }
            }
        }
    }
}
