package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.TwinTables;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Cassandra 5.0.9 loses a table's first write after a flush of that table when the commit-log
 * segment holding the write is deleted before the table's next flush, and the node then dies
 * (docs/cassandra.md, "Commit-log loss"): with or without Needle. This test runs that sequence
 * on one node, with small segments so that the commit log reclaims them, to a table with a Needle
 * index and its twin without, written in the same mutations and flushed together: each table may
 * lose only its first write after the flush (the defect's one signature), and Needle's answers
 * must be its table's data. The two tables mostly lose the same writes; one alone loses it when a
 * write of Cassandra's own tables lands in the commit log between the two tables' flushes, so
 * that only the later flush ends exactly where the write begins. The rounds
 * alternate an exposed write (the only one after the flush) with several, and the two ways a
 * segment goes: reclaimed for space (40 MB into another table) and deleted at a {@code DROP TABLE}.
 * {@code commitlog_sync: batch} rules out the loss of a last sync period: every write that does
 * not read back is the defect's.
 */
class CommitLogLossIT {
    private static final int KEYS = 200;
    private static final int ROUNDS = 6;

    @Test
    void aTableWithTheIndexAndItsTwinLoseTheSameWrites() throws Exception {
        long seed = Long.getLong("needle.it.seed", System.nanoTime());
        SplittableRandom r = new SplittableRandom(seed);
        try (LocalCluster cluster = LocalCluster.start(
                1,
                "--yaml",
                "commitlog_sync=batch",
                "--yaml",
                "commitlog_sync_period=0ms",
                "--yaml",
                "commitlog_segment_size=2MiB",
                "--yaml",
                "commitlog_total_space=16MiB")) {
            TwinTables t = new TwinTables("ks.t", "ks.t_twin");
            // What each table holds: the same writes, apart from what the defect took from one alone.
            Map<Integer, String> modelIndexed = new HashMap<>();
            Map<Integer, String> modelTwin = new HashMap<>();
            List<String> lost = new ArrayList<>();
            int lostInOneTable = 0;
            try (CqlSession s = cluster.session(1)) {
                s.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
                // No compaction: its bookkeeping writes to system tables could come between a
                // flush and the write after it.
                t.schema(
                        s,
                        "CREATE TABLE %s (pk int PRIMARY KEY, v text) WITH compaction = "
                                + "{'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}");
                s.execute("CREATE TABLE ks.filler (k int PRIMARY KEY, v text)");
                s.execute("CREATE CUSTOM INDEX ON ks.t () USING 'dev.needle.cassandra.NeedleIndex'");
                PreparedStatement filler = s.prepare("INSERT INTO ks.filler (k, v) VALUES (?, ?)");
                String value = "x".repeat(80_000);
                for (int round = 0; round < ROUNDS; round++) {
                    for (int i = 0; i < 50; i++) {
                        write(t, s, r, List.of(modelIndexed, modelTwin), round, i, true);
                    }
                    cluster.flush(1, "ks", "t", "t_twin");
                    boolean exposed = round % 2 == 0; // one write after the flush, or several
                    int after = exposed ? 1 : 2 + r.nextInt(5);
                    int firstAfterFlush = -1;
                    for (int i = 0; i < after; i++) {
                        int pk = write(t, s, r, List.of(modelIndexed, modelTwin), round, 100 + i, false);
                        firstAfterFlush = i == 0 ? pk : firstAfterFlush; // inserts: a loss shows
                    }
                    boolean drop = round % 4 >= 2;
                    if (drop) {
                        s.execute("CREATE TABLE ks.scratch (k int PRIMARY KEY)");
                        s.execute(SimpleStatement.newInstance("DROP TABLE ks.scratch")
                                .setTimeout(Duration.ofSeconds(60)));
                    } else {
                        for (int k = 0; k < 500; k++) { // 40 MB: the commit log reclaims its oldest segments
                            s.execute(filler.bind(k, value).setTimeout(Duration.ofSeconds(30)));
                        }
                    }
                    cluster.kill(1);
                    cluster.startNode(1);
                    TwinTables.execute(s, SimpleStatement.newInstance("SELECT release_version FROM system.local"));
                    for (int pk = 0; pk < KEYS + 20; pk++) {
                        String key = "round " + (round + 1) + " (" + (exposed ? "one write" : after + " writes")
                                + " after the flush, " + (drop ? "DROP TABLE" : "segments reclaimed") + "), key " + pk;
                        // Each table's data (at ALL, never skipped) against what was written to it; Needle's
                        // answer at ONE is its table's.
                        List<String> indexed = read(s, "ks.t", ConsistencyLevel.ALL, pk);
                        List<String> twin = read(s, "ks.t_twin", ConsistencyLevel.ALL, pk);
                        assertEquals(
                                indexed,
                                read(s, "ks.t", ConsistencyLevel.ONE, pk),
                                key + ": Needle's answer is not its table's data");
                        boolean lostIndexed = lostWrite(modelIndexed, pk, indexed);
                        boolean lostTwin = lostWrite(modelTwin, pk, twin);
                        if (lostIndexed || lostTwin) {
                            assertEquals(
                                    firstAfterFlush,
                                    pk,
                                    key + ": " + (lostIndexed ? "the table with the Needle index" : "the twin")
                                            + " lost a write that was not its first after the flush (read " + indexed
                                            + " with the index, " + twin + " without)");
                            lost.add(key + ": read " + indexed + " with the index, " + twin + " without"
                                    + (lostIndexed == lostTwin
                                            ? ""
                                            : " (lost in one table: its flush ended at the write)"));
                            lostInOneTable += lostIndexed == lostTwin ? 0 : 1;
                        }
                    }
                }
                assertEquals(
                        0, cluster.jmx(1).metric("ks", "t", "Failures"), "Needle caught errors; see the node's log");
            }
            long deleted = deletedSegments(cluster.nodeDir(1).resolve("logs"));
            System.out.println("CommitLogLossIT: " + ROUNDS + " crashes, " + deleted
                    + " commit-log segments deleted; Cassandra lost " + lost.size()
                    + " acknowledged write(s), each a table's first after a flush, " + lostInOneTable
                    + " in one table only (seed " + seed + ")"
                    + (lost.isEmpty() ? "" : ":\n  " + String.join("\n  ", lost)));
            assertTrue(deleted > 0, "no commit-log segment was deleted: the test did not reach the reclaim");
            // Cassandra 5.0.9 loses the exposed writes; a release without the defect keeps them, and
            // then docs/cassandra.md's section on the loss is out of date.
            assertTrue(
                    !lost.isEmpty(),
                    "Cassandra lost no write in " + ROUNDS + " rounds: has the commit-log defect of docs/cassandra.md"
                            + " been fixed in this Cassandra version?");
        }
    }

    /**
     * An insert (or, if allowed, one time in five a delete) of a random key, in one mutation for
     * both tables, recorded in each table's model; returns the key.
     */
    private static int write(
            TwinTables t,
            CqlSession s,
            SplittableRandom r,
            List<Map<Integer, String>> models,
            int round,
            int i,
            boolean deletes) {
        int pk = r.nextInt(KEYS);
        if (deletes && r.nextInt(5) == 0) {
            t.write(s, ConsistencyLevel.ONE, "DELETE FROM %s WHERE pk = ?", pk);
            models.forEach(m -> m.remove(pk));
        } else {
            String v = "r" + round + "-" + i;
            t.write(s, ConsistencyLevel.ONE, "INSERT INTO %s (pk, v) VALUES (?, ?)", pk, v);
            models.forEach(m -> m.put(pk, v));
        }
        return pk;
    }

    private static List<String> read(CqlSession s, String table, ConsistencyLevel cl, int pk) {
        return TwinTables.read(
                s,
                SimpleStatement.newInstance("SELECT pk, v FROM " + table + " WHERE pk = ?", pk)
                        .setConsistencyLevel(cl));
    }

    /**
     * Whether a table read {@code data} for {@code pk} where its model holds another value (a
     * lost write); the model then takes what the table holds.
     */
    private static boolean lostWrite(Map<Integer, String> model, int pk, List<String> data) {
        String want = model.get(pk);
        List<String> expected = want == null ? List.of() : List.of("[pk:" + pk + ", v:'" + want + "']");
        if (data.equals(expected)) {
            return false;
        }
        if (data.isEmpty()) {
            model.remove(pk);
        } else {
            model.put(pk, data.get(0).replaceAll(".*v:'(.*)'\\]", "$1"));
        }
        return true;
    }

    /** Segments that the node's debug logs say were deleted as unused. */
    private static long deletedSegments(Path logs) throws Exception {
        long n = 0;
        try (Stream<Path> files = Files.list(logs)) {
            for (Path f : files.filter(p -> p.getFileName().toString().startsWith("debug.log"))
                    .toList()) {
                try (Stream<String> lines = Files.lines(f)) {
                    n += lines.filter(l -> l.contains("will be deleted now")).count();
                }
            }
        }
        return n;
    }
}
