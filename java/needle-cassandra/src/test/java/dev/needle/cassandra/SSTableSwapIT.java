package dev.needle.cassandra;

import static com.datastax.oss.driver.api.core.ConsistencyLevel.ONE;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.CqlSession;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.TwinTables;
import java.time.Duration;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;

/**
 * Operations that replace an SSTable's reader by another reader of the same SSTable, and so send
 * the same SSTable in the "removed" and the "added" lists of one notification: index-summary
 * redistribution (after an ALTER of the index interval, and under memory pressure without one)
 * and a compaction aborted after its outputs were opened early. The SSTable's keys must stay
 * known through each; every read is compared with a twin table without the index.
 */
class SSTableSwapIT {
    private static final String SUMMARIES = "org.apache.cassandra.db:type=IndexSummaries";
    private static LocalCluster cluster;
    private static CqlSession session;

    @BeforeAll
    static void up() throws Exception {
        // Early opening every MiB, so that a compaction of a few MiB opens its outputs early.
        cluster = LocalCluster.start(1, "--yaml", "sstable_preemptive_open_interval=1MiB");
        session = cluster.session(1);
        session.execute("CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
    }

    @AfterAll
    static void down() {
        if (cluster != null) {
            cluster.close(); // and the sessions it opened
        }
    }

    private static TwinTables twins(String name) {
        TwinTables t = new TwinTables("ks." + name, "ks." + name + "_twin");
        t.schema(session, "CREATE TABLE %s (k int PRIMARY KEY, v text)");
        session.execute("CREATE CUSTOM INDEX ON ks." + name + " () USING 'dev.needle.cassandra.NeedleIndex'");
        return t;
    }

    /** Rows of random (incompressible) text, so that SSTables have the size written. */
    private static void load(TwinTables t, int from, int to, int valueBytes) {
        java.util.SplittableRandom r = new java.util.SplittableRandom(from);
        byte[] b = new byte[valueBytes * 3 / 4];
        for (int k = from; k < to; k++) {
            r.nextBytes(b);
            t.write(
                    session,
                    ONE,
                    "INSERT INTO %s (k, v) VALUES (?, ?)",
                    k,
                    java.util.Base64.getEncoder().encodeToString(b));
        }
    }

    private static void compareAll(TwinTables t, int from, int to) {
        for (int k = from; k < to; k++) {
            t.compare(session, ONE, "SELECT k, v FROM %s WHERE k = ?", k);
        }
    }

    @Test
    void summaryRedistributionAfterAnAlterOfTheIndexInterval() throws Exception {
        TwinTables t = twins("resized");
        load(t, 0, 400, 50);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "resized");
        session.execute("ALTER TABLE ks.resized WITH min_index_interval = 256");
        session.execute("ALTER TABLE ks.resized_twin WITH min_index_interval = 256");
        cluster.jmx(1).invoke(SUMMARIES, "redistributeSummaries");
        cluster.jmx(1).awaitReady("ks", "resized");
        compareAll(t, 0, 450);
    }

    @Test
    void summaryRedistributionUnderMemoryPressure() throws Exception {
        TwinTables t = twins("pressed");
        load(t, 0, 400, 50);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "pressed");
        Object capacity = cluster.jmx(1).get(SUMMARIES, "MemoryPoolCapacityInMB");
        cluster.jmx(1).set(SUMMARIES, "MemoryPoolCapacityInMB", 0L);
        try {
            cluster.jmx(1).invoke(SUMMARIES, "redistributeSummaries");
        } finally {
            cluster.jmx(1).set(SUMMARIES, "MemoryPoolCapacityInMB", capacity);
        }
        cluster.jmx(1).awaitReady("ks", "pressed");
        compareAll(t, 0, 450);
        // and once more with the pool back to its size: summaries are resampled upwards
        cluster.jmx(1).invoke(SUMMARIES, "redistributeSummaries");
        cluster.jmx(1).awaitReady("ks", "pressed");
        compareAll(t, 0, 450);
    }

    @Test
    void compactionAbortedAfterItsOutputsWereOpenedEarly() throws Exception {
        TwinTables t = twins("aborted");
        // Two SSTables of about 8 MiB each, so that their compaction opens its output early.
        load(t, 0, 8_000, 1_000);
        cluster.flush(1, "ks");
        load(t, 8_000, 16_000, 1_000);
        cluster.flush(1, "ks");
        cluster.jmx(1).awaitReady("ks", "aborted");
        String liveCount = "org.apache.cassandra.metrics:type=Table,keyspace=ks,scope=aborted,name=LiveSSTableCount";
        cluster.nodetool(1, "setcompactionthroughput", "1");
        try {
            Thread compaction = new Thread(() -> {
                try {
                    cluster.compact(1, "ks", "aborted");
                } catch (Exception e) {
                    // stopped: expected
                }
            });
            compaction.start();
            // A third live SSTable is the compaction's output, opened early: stop the compaction then.
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            boolean stopped = false;
            while (System.nanoTime() < deadline && !stopped && compaction.isAlive()) {
                if (cluster.jmx(1).gauge(liveCount) == 3) {
                    cluster.jmx(1)
                            .invoke(
                                    "org.apache.cassandra.db:type=CompactionManager",
                                    "stopCompaction",
                                    "MAJOR_COMPACTION");
                    stopped = true;
                }
                Thread.sleep(20);
            }
            compaction.join(120_000);
            assertTrue(stopped, "no early-opened output was seen before the compaction ended");
        } finally {
            cluster.nodetool(1, "setcompactionthroughput", "64");
        }
        assertEquals(
                2, cluster.jmx(1).gauge(liveCount), "the aborted compaction should leave the two original SSTables");
        cluster.jmx(1).awaitReady("ks", "aborted");
        compareAll(t, 0, 16_100);
    }
}
