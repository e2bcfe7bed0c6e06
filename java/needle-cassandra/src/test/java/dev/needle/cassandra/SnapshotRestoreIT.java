package dev.needle.cassandra;

import static com.datastax.oss.driver.api.core.ConsistencyLevel.ONE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;

import com.datastax.oss.driver.api.core.CqlSession;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.TwinTables;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Cassandra's documented restore procedure: stop the node, replace a table's SSTable files by
 * those of a snapshot, start the node. Here the restored SSTable has the same generation as the
 * one it replaces, so anything Needle saved for the replaced SSTable must not be taken for the
 * restored one.
 */
class SnapshotRestoreIT {

    @Test
    void aSnapshotRestoredOverAnSSTableOfTheSameGeneration() throws Exception {
        try (LocalCluster cluster = LocalCluster.start(1)) {
            TwinTables t = new TwinTables("ks.t", "ks.t_twin");
            try (CqlSession s = cluster.session(1)) {
                s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
                t.schema(s, "CREATE TABLE %s (k int PRIMARY KEY, v int)");
                s.execute("CREATE CUSTOM INDEX ON ks.t () USING 'dev.needle.cassandra.NeedleIndex'");
                for (int k = 0; k < 50; k++) {
                    t.write(s, ONE, "INSERT INTO %s (k, v) VALUES (?, ?)", k, k);
                }
                cluster.flush(1, "ks");
                cluster.nodetool(1, "snapshot", "-t", "restore1", "ks");
                t.schema(s, "TRUNCATE %s");
            }
            cluster.restart(1);
            try (CqlSession s = cluster.session(1)) {
                for (int k = 100; k < 150; k++) {
                    t.write(s, ONE, "INSERT INTO %s (k, v) VALUES (?, ?)", k, k);
                }
                cluster.flush(1, "ks");
                cluster.jmx(1).awaitReady("ks", "t");
                for (int k = 0; k < 160; k++) {
                    t.compare(s, ONE, "SELECT k, v FROM %s WHERE k = ?", k);
                }
            }
            cluster.stop(1);
            for (String table : new String[] {"t", "t_twin"}) {
                restore(cluster, table, "restore1");
            }
            cluster.startNode(1);
            cluster.jmx(1).awaitReady("ks", "t");
            try (CqlSession s = cluster.session(1)) {
                for (int k = 0; k < 160; k++) {
                    List<String> rows = t.compare(s, ONE, "SELECT k, v FROM %s WHERE k = ?", k);
                    assertEquals(k < 50 ? 1 : 0, rows.size(), "key " + k + " after the restore");
                }
            }
        }
    }

    /** Deletes the table's live SSTable files and copies the snapshot's files in (node stopped). */
    static void restore(LocalCluster cluster, String table, String snapshot) throws IOException {
        List<Path> dirs = cluster.tableDirs(1, "ks", table);
        assertEquals(1, dirs.size(), "table folders of " + table + ": " + dirs);
        Path dir = dirs.get(0);
        try (Stream<Path> files = Files.list(dir)) {
            for (Path f : files.filter(Files::isRegularFile).toList()) {
                Files.delete(f);
            }
        }
        Path snap = dir.resolve("snapshots").resolve(snapshot);
        try (Stream<Path> files = Files.list(snap)) {
            List<Path> copied = files.filter(f -> !f.getFileName().toString().equals("manifest.json")
                            && !f.getFileName().toString().equals("schema.cql"))
                    .toList();
            assertFalse(copied.isEmpty(), "empty snapshot " + snap);
            for (Path f : copied) {
                Files.copy(f, dir.resolve(f.getFileName()));
            }
        }
    }
}
