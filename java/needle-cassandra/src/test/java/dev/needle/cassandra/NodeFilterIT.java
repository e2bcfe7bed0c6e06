package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DriverException;
import com.datastax.oss.driver.api.core.ProtocolVersion;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import com.datastax.oss.driver.api.core.metadata.Node;
import com.datastax.oss.driver.api.core.type.codec.TypeCodecs;
import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.NodeJmx;
import dev.needle.testkit.TwinTables;
import java.net.InetSocketAddress;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Set;
import java.util.TreeSet;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;
import org.junit.jupiter.api.Test;

/**
 * Node filters on a real three-node cluster, each read compared with a twin table without the
 * index (docs/invariants.md, invariant 5):
 *
 * <ul>
 *   <li>quiescent equivalence: once the copies are in sync, reads through a coordinator that is not
 *       a replica return what stock returns, and reads of absent and deleted keys are skipped;</li>
 *   <li>bounded staleness: a key written through another coordinator is never missed by a read
 *       that starts more than S after the write was acknowledged, and a key written through the
 *       reading coordinator is never missed at all;</li>
 *   <li>remote feedback: a key whose rows were deleted one by one becomes skippable everywhere;</li>
 *   <li>copies shrunk at rest (the cluster shrinks them after 3 s steady instead of a minute): once
 *       every owner has shrunk its copies, every key matches the twin through every node, and again
 *       after new keys grow the shrunk copies;</li>
 *   <li>fail-safe: a copy whose owner's sync rows are lost stops being trusted within S, and
 *       catches up from a snapshot once they flow again; a killed owner's copy stops being trusted within S (its reads fail as stock's
 *       do, none is answered empty), and after its restart skipping resumes with its new epoch;</li>
 *   <li>TRUNCATE; the index dropped and created again; the table dropped and created again;</li>
 *   <li>every candidate: with RF 2, a replica that missed a delete holds the key live, and no
 *       coordinator skips it at ONE, whichever replica the snitch would pick; once repair streams
 *       the tombstone to it, the key is skipped;</li>
 *   <li>a node added by bootstrap publishes the keys streamed to it;</li>
 *   <li>copies scoped to the ranges a node replicates (the default) follow the ring: while a node
 *       bootstraps, reads through every coordinator at ONE and QUORUM match the twin's; after it
 *       joins, every node trusts a copy of each of its new co-replicas and skips their absent and
 *       deleted keys again.</li>
 * </ul>
 */
class NodeFilterIT {
    private static final long STALENESS_MILLIS = 1000;
    /** Reads go through coordinators that do not replicate the key: every node keeps copies of every other. */
    private static final String INDEX_OPTIONS =
            "{'node_filter': 'one', 'node_filter_copies': 'all', 'staleness': '" + STALENESS_MILLIS + "ms'}";

    /** The nodes (by the last byte of their address: node 1 is 127.0.x.1) that hold a key of {@code ks}, from the driver's token map. */
    private static Set<Integer> owners(CqlSession s, String ks, int pk) {
        Set<Integer> out = new TreeSet<>();
        for (Node n : s.getMetadata()
                .getTokenMap()
                .orElseThrow()
                .getReplicas(ks, TypeCodecs.INT.encode(pk, ProtocolVersion.DEFAULT))) {
            out.add(number(n));
        }
        return out;
    }

    /** Waits until {@code node} trusts its copies of every other node's filter of {@code ks.table}. */
    private static void awaitTrustedCopies(CqlSession s, String ks, String table, int others) throws Exception {
        long deadline = System.nanoTime() + Duration.ofSeconds(90).toNanos();
        List<String> last = List.of();
        while (System.nanoTime() < deadline) {
            last = new ArrayList<>();
            int trusted = 0;
            for (Row r : s.execute(SimpleStatement.newInstance(
                    "SELECT owner, role, trusted, state FROM needle_views.node_filters WHERE keyspace_name = ?"
                            + " AND table_name = ?",
                    ks,
                    table))) {
                last.add(r.getFormattedContents());
                if ("copy".equals(r.getString("role")) && r.getBoolean("trusted")) {
                    trusted++;
                }
            }
            if (trusted == others) {
                return;
            }
            Thread.sleep(200);
        }
        throw new AssertionError("copies of " + ks + "." + table + " not trusted within 90 s: " + last);
    }

    @Test
    void remoteReadsAreSkippedOnlyWhenEveryReplicaHoldsNoLiveData() throws Exception {
        try (LocalCluster cluster = LocalCluster.start(
                3,
                "--yaml",
                "hinted_handoff_enabled=false",
                "--jvm-opt=-Dneedle.fault_injection=true",
                // Copies at rest are shrunk after 3 s instead of a minute (shrunkCopies).
                "--jvm-opt=-Dneedle.node_filter.shrink_after_ms=" + SHRINK_AFTER_MILLIS,
                "--jvm-opt=-Dneedle.node_filter.quiet_ms=1000")) {
            TwinTables rf1 = new TwinTables("ks1.needle", "ks1.twin");
            try (CqlSession s1 = cluster.session(1);
                    CqlSession s2 = cluster.session(2)) {
                s1.execute(
                        "CREATE KEYSPACE ks1 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}");
                s1.execute(
                        "CREATE KEYSPACE ks2 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}");
                rf1.schema(s1, "CREATE TABLE %s (pk int, c int, v text, PRIMARY KEY (pk, c))");
                s1.execute(
                        "CREATE CUSTOM INDEX needle_idx ON ks1.needle () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = "
                                + INDEX_OPTIONS);
                s1.execute("CREATE TABLE ks2.needle (pk int PRIMARY KEY, v text)");
                s1.execute("CREATE TABLE ks2.twin (pk int PRIMARY KEY, v text)");
                s1.execute(
                        "CREATE CUSTOM INDEX ON ks2.needle () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = "
                                + INDEX_OPTIONS);

                // Written through node 2, so node 1 has no recent write of these keys to go by.
                for (int pk = 0; pk < 600; pk++) {
                    rf1.write(s2, ConsistencyLevel.ONE, "INSERT INTO %s (pk, c, v) VALUES (?, 1, ?)", pk, "v" + pk);
                }
                for (int pk = 0; pk < 600; pk += 3) {
                    rf1.write(s2, ConsistencyLevel.ONE, "DELETE FROM %s WHERE pk = ?", pk);
                }
                cluster.flush(2, "ks1");
                awaitTrustedCopies(s1, "ks1", "needle", 2);

                // Quiescent equivalence through node 1, which owns about a third of the keys.
                int remoteAbsentOrDeleted = 0;
                long skips0 = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne");
                for (int pk = -100; pk < 700; pk++) {
                    rf1.compare(s1, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
                    rf1.compare(s1, ConsistencyLevel.QUORUM, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
                    boolean gone = pk < 0 || pk >= 600 || pk % 3 == 0;
                    if (gone && !owners(s1, "ks1", pk).contains(1)) {
                        remoteAbsentOrDeleted++;
                    }
                }
                long skips = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne") - skips0;
                System.out.printf(
                        "NodeFilterIT: %d remote reads of absent or deleted keys, %d skipped by node filters%n",
                        remoteAbsentOrDeleted, skips);
                // Each is skipped unless a false positive of a copy lets it through (rate 0.001).
                assertTrue(
                        skips >= remoteAbsentOrDeleted - 3,
                        skips + " of " + remoteAbsentOrDeleted + " remote reads of absent or deleted keys skipped");
                assertEquals(
                        0,
                        cluster.jmx(1).metric("ks1", "needle", "NodeSkipsQuorum"),
                        "node_filter 'one' skipped at QUORUM");
                long keys = cluster.jmx(1).metric("ks1", "needle", "NodeFilterPublishedKeys");
                long bytes = cluster.jmx(1).metric("ks1", "needle", "NodeFilterPublishedBytes");
                assertTrue(
                        keys > 0 && bytes >= 16 * keys,
                        "node 1 publishes its keys from native memory, 16 bytes a key or more: " + keys + " keys, "
                                + bytes + " bytes");

                staleness(cluster, rf1, s1, s2);
                rowByRowDeletes(cluster, rf1, s1, s2);
                shrunkCopies(cluster, rf1, s1, s2);
                syncLost(cluster, rf1, s1, s2);
                killedOwner(cluster, rf1, s1, s2);
                truncateAndRecreate(cluster, rf1, s1, s2);
            }
            everyCandidate(cluster);
            TwinTables scoped = scopedTable(cluster);
            try (ComparingReader during = new ComparingReader(cluster, scoped, 3)) {
                addedNode(cluster, rf1);
                during.stopAndCheck();
            }
            scopedCopiesFollowTheRing(cluster, scoped);
            for (int n = 1; n <= cluster.nodes(); n++) {
                NodeJmx jmx = cluster.jmx(n);
                long changes = jmx.metric("ks1", "needle", "NodeFilterChangesSent");
                long batchBytes = jmx.metric("ks1", "needle", "NodeFilterBatchBytesSent");
                System.out.printf(
                        "NodeFilterIT node %d, ks1.needle: %d changes sent in %d batch bytes (%.1f bytes per change),"
                                + " %d snapshots, %d bytes sent in all, %d received%n",
                        n,
                        changes,
                        batchBytes,
                        (double) batchBytes / Math.max(1, changes),
                        jmx.metric("ks1", "needle", "NodeFilterSnapshotsSent"),
                        jmx.metric("ks1", "needle", "NodeFilterBytesSent"),
                        jmx.metric("ks1", "needle", "NodeFilterBytesReceived"));
            }
        }
    }

    /**
     * A fourth node bootstraps: it receives its ranges by streaming, publishes its keys, and
     * through node 1 every read matches the twin, with the new node's absent keys skipped once
     * node 1 trusts its copy.
     */
    private static void addedNode(LocalCluster cluster, TwinTables t) throws Exception {
        int added = cluster.addNode();
        try (CqlSession s1 = cluster.session(1)) {
            awaitTrustedCopies(s1, "ks1", "needle", 3);
            long skips0 = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne");
            int absentOnNew = 0;
            for (int pk = 0; pk < 700; pk++) {
                t.compare(s1, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
                if (pk % 2 == 1 && owners(s1, "ks1", pk).equals(Set.of(added))) {
                    absentOnNew++; // odd keys were truncated and not written again
                }
            }
            long skips = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne") - skips0;
            assertTrue(absentOnNew > 0, "node " + added + " owns none of the keys read");
            assertTrue(
                    skips >= absentOnNew, skips + " skipped; node " + added + " owns " + absentOnNew + " absent keys");
        }
    }

    private static final int SCOPED_KEYS = 400;

    /**
     * RF 2 with copies scoped to the ranges a node replicates (the default), on the three nodes:
     * keys written and a third of them deleted, at ALL so that every replica of both tables holds
     * the same, flushed; returns once every node trusts its copies.
     */
    private static TwinTables scopedTable(LocalCluster cluster) throws Exception {
        TwinTables t = new TwinTables("ks3.needle", "ks3.twin");
        try (CqlSession s1 = cluster.session(1)) {
            s1.execute("CREATE KEYSPACE ks3 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 2}");
            t.schema(s1, "CREATE TABLE %s (pk int PRIMARY KEY, v text)");
            s1.execute("CREATE CUSTOM INDEX ON ks3.needle () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = "
                    + "{'node_filter': 'quorum', 'staleness': '" + STALENESS_MILLIS + "ms'}");
            for (int pk = 0; pk < SCOPED_KEYS; pk++) {
                t.write(s1, ConsistencyLevel.ALL, "INSERT INTO %s (pk, v) VALUES (?, ?)", pk, "v" + pk);
            }
            for (int pk = 0; pk < SCOPED_KEYS; pk += 3) {
                t.write(s1, ConsistencyLevel.ALL, "DELETE FROM %s WHERE pk = ?", pk);
            }
        }
        for (int n = 1; n <= cluster.nodes(); n++) {
            cluster.flush(n, "ks3");
        }
        for (int n = 1; n <= cluster.nodes(); n++) {
            try (CqlSession s = cluster.session(n)) {
                awaitTrustedCopies(s, "ks3", "needle", coReplicas(s, "ks3", n).size());
            }
        }
        return t;
    }

    /**
     * After the fourth node joined: each node trusts a copy of each node it now shares a replica
     * set with (as the driver's token map computes them, the new node included), every read
     * through every node at ONE and QUORUM matches the twin's, and a node skips the absent and
     * deleted keys it replicates at QUORUM (the other replica's copy answers for it).
     */
    private static void scopedCopiesFollowTheRing(LocalCluster cluster, TwinTables t) throws Exception {
        for (int n = 1; n <= cluster.nodes(); n++) {
            try (CqlSession s = cluster.session(n)) {
                Set<Integer> co = coReplicas(s, "ks3", n);
                awaitTrustedCopies(s, "ks3", "needle", co.size());
                long skips0 = cluster.jmx(n).metric("ks3", "needle", "NodeSkipsQuorum");
                int goneHere = 0;
                for (int pk = -50; pk < SCOPED_KEYS + 50; pk++) {
                    t.compare(s, ConsistencyLevel.ONE, "SELECT pk, v FROM %s WHERE pk = ?", pk);
                    t.compare(s, ConsistencyLevel.QUORUM, "SELECT pk, v FROM %s WHERE pk = ?", pk);
                    boolean gone = pk < 0 || pk >= SCOPED_KEYS || pk % 3 == 0;
                    if (gone && owners(s, "ks3", pk).contains(n)) {
                        goneHere++;
                    }
                }
                long skips = cluster.jmx(n).metric("ks3", "needle", "NodeSkipsQuorum") - skips0;
                System.out.printf(
                        "NodeFilterIT ks3 node %d: copies of %s trusted, %d of %d QUORUM reads of absent or deleted"
                                + " keys it replicates skipped%n",
                        n, co, skips, goneHere);
                // Each is skipped unless a false positive of a copy lets it through (rate 0.001).
                assertTrue(goneHere > 0, "node " + n + " replicates none of the absent keys read");
                assertTrue(skips >= goneHere - 3, "node " + n + ": " + skips + " of " + goneHere + " skipped");
            }
        }
    }

    /** The other nodes that share a replica set of {@code ks} with {@code node}, from the driver's token map. */
    private static Set<Integer> coReplicas(CqlSession s, String ks, int node) {
        var map = s.getMetadata().getTokenMap().orElseThrow();
        Node self = s.getMetadata().getNodes().values().stream()
                .filter(n -> number(n) == node)
                .findFirst()
                .orElseThrow();
        Set<Integer> out = new TreeSet<>();
        for (var range : map.getTokenRanges(ks, self)) {
            for (Node n : map.getReplicas(ks, range)) {
                out.add(number(n));
            }
        }
        out.remove(node);
        return out;
    }

    private static int number(Node n) {
        byte[] b = ((InetSocketAddress) n.getEndPoint().resolve()).getAddress().getAddress();
        return b[3] & 0xFF;
    }

    /**
     * Reads every key of a twin pair through nodes 1 to N in turn, at ONE and QUORUM, on a thread
     * of its own until stopped, and remembers the first read whose answers differ. A read that
     * fails (a timeout while a node streams) is counted, not compared.
     */
    private static final class ComparingReader implements AutoCloseable {
        private final Thread thread;
        private final AtomicBoolean stop = new AtomicBoolean();
        private final AtomicReference<Throwable> wrong = new AtomicReference<>();
        private final CqlSession[] sessions;
        private long compared;
        private long failed;

        ComparingReader(LocalCluster cluster, TwinTables pair, int nodes) {
            TwinTables t = new TwinTables(pair.indexed(), pair.twin()); // its own counter
            sessions = new CqlSession[nodes];
            for (int n = 1; n <= nodes; n++) {
                sessions[n - 1] = cluster.session(n);
            }
            thread = new Thread(
                    () -> {
                        for (int round = 0; !stop.get() && wrong.get() == null; round++) {
                            CqlSession s = sessions[round % sessions.length];
                            ConsistencyLevel cl =
                                    round / sessions.length % 2 == 0 ? ConsistencyLevel.ONE : ConsistencyLevel.QUORUM;
                            for (int pk = -20; pk < SCOPED_KEYS + 20 && !stop.get(); pk += 7) {
                                try {
                                    t.compare(s, cl, "SELECT pk, v FROM %s WHERE pk = ?", pk);
                                    compared++;
                                } catch (AssertionError e) {
                                    wrong.compareAndSet(null, e);
                                    return;
                                } catch (DriverException e) {
                                    failed++;
                                }
                            }
                        }
                    },
                    "reads-during-bootstrap");
            thread.setDaemon(true);
            thread.start();
        }

        /** Stops the reads and fails if any two answers differed, or if none were compared. */
        void stopAndCheck() throws InterruptedException {
            stop.set(true);
            thread.join();
            System.out.printf("NodeFilterIT: %d reads compared during the bootstrap, %d failed%n", compared, failed);
            if (wrong.get() != null) {
                throw new AssertionError("a read during the bootstrap differed from the twin's", wrong.get());
            }
            assertTrue(compared > 0, "no read was compared during the bootstrap");
        }

        @Override
        public void close() {
            stop.set(true);
            try {
                thread.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            for (CqlSession s : sessions) {
                s.close();
            }
        }
    }

    /**
     * New keys written through node 2 and read through node 1 at once, and again until they appear:
     * no read that began more than S after the write's acknowledgement may miss one.
     */
    private static void staleness(LocalCluster cluster, TwinTables t, CqlSession s1, CqlSession s2) throws Exception {
        long syncWrites = syncTableWrites(cluster, 1);
        List<Long> missedAt = new ArrayList<>();
        int keys = 0;
        for (int pk = 10_000; keys < 60; pk++) {
            if (owners(s1, "ks1", pk).contains(1)) {
                continue; // the owner reads its own data
            }
            keys++;
            t.write(s2, ConsistencyLevel.ONE, "INSERT INTO %s (pk, c, v) VALUES (?, 1, 'new')", pk);
            long acked = System.nanoTime();
            while (true) {
                long began = System.nanoTime();
                List<String> rows = TwinTables.read(
                        s1,
                        SimpleStatement.newInstance("SELECT v FROM ks1.needle WHERE pk = ?", pk)
                                .setConsistencyLevel(ConsistencyLevel.ONE));
                if (!rows.isEmpty()) {
                    break;
                }
                long sinceAck = (began - acked) / 1_000_000;
                missedAt.add(sinceAck);
                assertTrue(
                        sinceAck <= STALENESS_MILLIS,
                        "a read that began " + sinceAck + " ms after the write was acknowledged missed key " + pk);
            }
            // Through the writing coordinator, never a miss.
            assertEquals(
                    1,
                    TwinTables.read(
                                    s2,
                                    SimpleStatement.newInstance("SELECT v FROM ks1.needle WHERE pk = ?", pk)
                                            .setConsistencyLevel(ConsistencyLevel.ONE))
                            .size(),
                    "node 2 missed its own write of " + pk);
        }
        System.out.printf(
                "NodeFilterIT: %d new keys read at once through another coordinator: %d reads missed, at %s ms after the ack%n",
                keys, missedAt.size(), missedAt);
        // The batches and heartbeats that brought them were handed to node 1's copies as they
        // arrived, not written to its sync tables (SyncIndex#receive).
        assertEquals(syncWrites, syncTableWrites(cluster, 1), "node 1 wrote sync rows to its tables");
    }

    /** The writes node {@code n} applied to the sync tables that carry changes and heartbeats. */
    private static long syncTableWrites(LocalCluster cluster, int n) throws Exception {
        long writes = 0;
        for (String table : List.of("batches", "heartbeats")) {
            // get, not count: a metric that is not there fails the test rather than reading 0.
            writes += ((Number) cluster.jmx(n)
                            .get(
                                    "org.apache.cassandra.metrics:type=Table,keyspace=needle_sync,scope=" + table
                                            + ",name=WriteLatency",
                                    "Count"))
                    .longValue();
        }
        return writes;
    }

    /**
     * Rows deleted one by one leave the partition live in every filter until a read proves it
     * dead: a read through node 1 that finds nothing asks the owner to check, and the owner's
     * removal reaches node 1's copy.
     */
    private static void rowByRowDeletes(LocalCluster cluster, TwinTables t, CqlSession s1, CqlSession s2)
            throws Exception {
        int pk = 20_000;
        while (owners(s1, "ks1", pk).contains(1)) {
            pk++;
        }
        t.write(s2, ConsistencyLevel.ONE, "INSERT INTO %s (pk, c, v) VALUES (?, 1, 'x')", pk);
        t.write(s2, ConsistencyLevel.ONE, "DELETE FROM %s WHERE pk = ? AND c = 1", pk);
        Thread.sleep(STALENESS_MILLIS + 1500); // past node 2's recent-write window (it does not matter for node 1)
        final int key = pk;
        long deadline = System.nanoTime() + Duration.ofSeconds(30).toNanos();
        long skips0 = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne");
        while (cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne") == skips0) {
            assertTrue(System.nanoTime() < deadline, "a key whose rows were all deleted was not skipped within 30 s");
            assertEquals(List.of(), t.compare(s1, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", key));
            Thread.sleep(100);
        }
    }

    /** How long a receiver's keys stay steady before its copy is shrunk, in this test's cluster. */
    private static final long SHRINK_AFTER_MILLIS = 3000;

    /**
     * Copies shrunk at rest answer as stock does: keys written and deleted through node 2 grow
     * every copy (snapshots with room for twice the keys), the writes stop, and once every owner
     * has shrunk its copies (a snapshot with room for an eighth more keys, at the copy's own
     * sequence number), every key is read through every node and compared with the twin; then new
     * keys grow the shrunk copies again (their room is smaller now), and every key is compared
     * once more.
     */
    private static void shrunkCopies(LocalCluster cluster, TwinTables t, CqlSession s1, CqlSession s2)
            throws Exception {
        long[] shrinks0 = shrinksSent(cluster);
        for (int pk = 60_000; pk < 61_500; pk++) {
            t.write(s2, ConsistencyLevel.ONE, "INSERT INTO %s (pk, c, v) VALUES (?, 1, 'grown')", pk);
        }
        for (int pk = 60_000; pk < 61_500; pk += 3) {
            t.write(s2, ConsistencyLevel.ONE, "DELETE FROM %s WHERE pk = ?", pk);
        }
        long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
        while (true) {
            long[] now = shrinksSent(cluster);
            boolean all = true;
            for (int n = 0; n < now.length; n++) {
                all &= now[n] > shrinks0[n];
            }
            if (all) {
                break;
            }
            assertTrue(
                    System.nanoTime() < deadline,
                    "not every owner shrank its copies within 60 s of the writes: " + Arrays.toString(shrinks0)
                            + " shrinks before, " + Arrays.toString(now) + " after");
            Thread.sleep(250);
        }
        long[] shrinks = shrinksSent(cluster);
        System.out.printf(
                "NodeFilterIT: copies shrunk at rest, shrinking snapshots by owner %s (before the writes %s)%n",
                Arrays.toString(shrinks), Arrays.toString(shrinks0));
        compareGrownKeys(cluster, t, 61_500);
        for (int pk = 61_500; pk < 62_100; pk++) {
            t.write(s2, ConsistencyLevel.ONE, "INSERT INTO %s (pk, c, v) VALUES (?, 1, 'regrown')", pk);
        }
        Thread.sleep(STALENESS_MILLIS + 1500); // past node 2's recent-write window
        compareGrownKeys(cluster, t, 62_100);
    }

    /**
     * Every key from 59,900 to {@code end} + 100 through every node at ONE, compared with the
     * twin; the reads of absent and deleted keys that another node owns are skipped, but for the
     * copies' false positives.
     */
    private static void compareGrownKeys(LocalCluster cluster, TwinTables t, int end) throws Exception {
        long skips0 = 0;
        for (int n = 1; n <= 3; n++) {
            skips0 += cluster.jmx(n).metric("ks1", "needle", "NodeSkipsOne");
        }
        int remoteGone = 0;
        for (int n = 1; n <= 3; n++) {
            try (CqlSession s = cluster.session(n)) {
                for (int pk = 59_900; pk < end + 100; pk++) {
                    t.compare(s, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
                    boolean gone = pk < 60_000 || pk >= end || (pk < 61_500 && pk % 3 == 0);
                    if (gone && !owners(s, "ks1", pk).contains(n)) {
                        remoteGone++;
                    }
                }
            }
        }
        long skips = -skips0;
        for (int n = 1; n <= 3; n++) {
            skips += cluster.jmx(n).metric("ks1", "needle", "NodeSkipsOne");
        }
        System.out.printf(
                "NodeFilterIT: keys 59,900-%d compared through every node, %d of %d remote reads of absent or"
                        + " deleted keys skipped%n",
                end + 99, skips, remoteGone);
        assertTrue(
                skips >= remoteGone - remoteGone / 100 - 3,
                skips + " of " + remoteGone + " remote reads of absent or deleted keys skipped through shrunk copies");
    }

    /** {@code NodeFilterShrinksSent} of ks1.needle on each node. */
    private static long[] shrinksSent(LocalCluster cluster) throws Exception {
        long[] out = new long[3];
        for (int n = 1; n <= 3; n++) {
            out[n - 1] = cluster.jmx(n).metric("ks1", "needle", "NodeFilterShrinksSent");
        }
        return out;
    }

    /**
     * Fail-safe: node 2's sync rows are dropped on their way out (Cassandra's outbound sink, armed
     * through Needle's fault injection) while keys are written through it. After S, node 1 trusts
     * its copy of node 2 no more: every read of node 2's keys goes to Cassandra, written keys are
     * found. Once sync flows again, the copy's gap makes it ask for a snapshot, and skipping resumes.
     */
    private static void syncLost(LocalCluster cluster, TwinTables t, CqlSession s1, CqlSession s2) throws Exception {
        List<Integer> on2 = new ArrayList<>();
        for (int pk = 40_000; on2.size() < 30; pk++) {
            if (owners(s1, "ks1", pk).equals(Set.of(2))) {
                on2.add(pk);
            }
        }
        String faults = "dev.needle:type=FaultInjection";
        cluster.jmx(2).invoke(faults, "arm", "sync.drop", 1);
        try {
            for (int pk : on2.subList(0, 15)) {
                t.write(s2, ConsistencyLevel.ONE, "INSERT INTO %s (pk, c, v) VALUES (?, 1, 'unsynced')", pk);
            }
            Thread.sleep(STALENESS_MILLIS + 300);
            long stale0 = cluster.jmx(1).metric("ks1", "needle", "NodePassedStale");
            for (int pk : on2) {
                t.compare(s1, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
            }
            assertEquals(
                    on2.size(),
                    cluster.jmx(1).metric("ks1", "needle", "NodePassedStale") - stale0,
                    "reads of node 2's keys while its sync is lost, passed as stale");
        } finally {
            cluster.jmx(2).invoke(faults, "disarmAll");
        }
        awaitTrustedCopies(s1, "ks1", "needle", 2);
        long skips0 = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne");
        for (int pk : on2) {
            t.compare(s1, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
        }
        long skips = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne") - skips0;
        assertTrue(skips >= 14, "once sync resumed, " + skips + " of 15 reads of absent keys skipped");
    }

    /**
     * kill -9 of an owner: within S its copy is no longer trusted, so reads of its keys fail as
     * stock's do instead of being answered empty; after the restart, its new epoch is published
     * and skipping resumes.
     */
    private static void killedOwner(LocalCluster cluster, TwinTables t, CqlSession s1, CqlSession s2) throws Exception {
        List<Integer> absentOn3 = new ArrayList<>();
        for (int pk = 30_000; absentOn3.size() < 20; pk++) {
            if (owners(s1, "ks1", pk).equals(Set.of(3))) {
                absentOn3.add(pk);
            }
        }
        cluster.kill(3);
        Thread.sleep(STALENESS_MILLIS + 200);
        for (int pk : absentOn3) {
            SimpleStatement st = SimpleStatement.newInstance("SELECT v FROM ks1.needle WHERE pk = ?", pk)
                    .setConsistencyLevel(ConsistencyLevel.ONE)
                    .setTimeout(Duration.ofSeconds(15));
            assertThrows(DriverException.class, () -> s1.execute(st), "a read of a dead owner's key answered");
        }
        cluster.startNode(3);
        awaitTrustedCopies(s1, "ks1", "needle", 2);
        long skips0 = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne");
        for (int pk : absentOn3) {
            t.compare(s1, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
        }
        long skips = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne") - skips0;
        assertTrue(
                skips >= absentOn3.size() - 1, "after the restart " + skips + " of " + absentOn3.size() + " skipped");
    }

    /**
     * TRUNCATE: every owner starts a new epoch from what is left, and keys written afterwards are
     * read back through other coordinators once S has passed. Then the index, and then the table,
     * are dropped and created again: each new one publishes from scratch, and skipping resumes.
     */
    private static void truncateAndRecreate(LocalCluster cluster, TwinTables t, CqlSession s1, CqlSession s2)
            throws Exception {
        t.schema(s2, "TRUNCATE %s");
        for (int pk = 0; pk < 600; pk += 2) {
            t.write(s2, ConsistencyLevel.ONE, "INSERT INTO %s (pk, c, v) VALUES (?, 2, 'after')", pk);
        }
        Thread.sleep(STALENESS_MILLIS + 200);
        for (int pk = 0; pk < 600; pk++) {
            t.compare(s1, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
        }
        s1.execute("DROP INDEX ks1.needle_idx");
        s1.execute(
                "CREATE CUSTOM INDEX needle_idx ON ks1.needle () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = "
                        + INDEX_OPTIONS);
        awaitTrustedCopies(s1, "ks1", "needle", 2);
        long skips0 = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne");
        for (int pk = 0; pk < 600; pk++) {
            t.compare(s1, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
        }
        long skips = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne") - skips0;
        assertTrue(
                skips > 100,
                "after re-creating the index, " + skips + " of about 200 remote reads of truncated keys skipped");
        // The table itself dropped and created again (a new table id): nothing of the old one is used.
        t.schema(s1, "DROP TABLE %s");
        t.schema(s1, "CREATE TABLE %s (pk int, c int, v text, PRIMARY KEY (pk, c))");
        s1.execute("CREATE CUSTOM INDEX needle_idx ON ks1.needle () USING 'dev.needle.cassandra.NeedleIndex'"
                + " WITH OPTIONS = " + INDEX_OPTIONS);
        for (int pk = 0; pk < 600; pk += 2) {
            t.write(s2, ConsistencyLevel.ONE, "INSERT INTO %s (pk, c, v) VALUES (?, 3, 'new table')", pk);
        }
        awaitTrustedCopies(s1, "ks1", "needle", 2);
        Thread.sleep(STALENESS_MILLIS + 200);
        long skips1 = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne");
        for (int pk = 0; pk < 700; pk++) {
            t.compare(s1, ConsistencyLevel.ONE, "SELECT pk, c, v FROM %s WHERE pk = ?", pk);
        }
        skips = cluster.jmx(1).metric("ks1", "needle", "NodeSkipsOne") - skips1;
        assertTrue(skips > 100, "after re-creating the table, " + skips + " remote reads of absent keys skipped");
    }

    /**
     * RF 2: node 3 misses a delete (down, no hints) and comes back holding the row. Through node 1
     * at ONE, a read of that key must not be skipped: stock could read node 3 and return the row.
     */
    private static void everyCandidate(LocalCluster cluster) throws Exception {
        try (CqlSession s1 = cluster.session(1)) {
            int pk = 0;
            while (!owners(s1, "ks2", pk).equals(Set.of(2, 3))) {
                pk++;
            }
            TwinTables t = new TwinTables("ks2.needle", "ks2.twin");
            t.write(s1, ConsistencyLevel.ALL, "INSERT INTO %s (pk, v) VALUES (?, 'old')", pk);
            cluster.stop(3);
            t.write(s1, ConsistencyLevel.ONE, "DELETE FROM %s WHERE pk = ?", pk);
            cluster.startNode(3);
            awaitTrustedCopies(s1, "ks2", "needle", 2);
            Thread.sleep(STALENESS_MILLIS + 1500); // past node 1's own recent-write window
            final int key = pk;
            long live0 = cluster.jmx(1).metric("ks2", "needle", "NodePassedLive");
            long skips0 = cluster.jmx(1).metric("ks2", "needle", "NodeSkipsOne");
            for (int i = 0; i < 20; i++) {
                List<String> rows = TwinTables.read(
                        s1,
                        SimpleStatement.newInstance("SELECT v FROM ks2.needle WHERE pk = ?", key)
                                .setConsistencyLevel(ConsistencyLevel.ONE));
                assertTrue(rows.size() <= 1, "rows " + rows);
            }
            assertEquals(
                    0,
                    cluster.jmx(1).metric("ks2", "needle", "NodeSkipsOne") - skips0,
                    "a key live on one of its replicas was skipped");
            assertEquals(20, cluster.jmx(1).metric("ks2", "needle", "NodePassedLive") - live0);
            // Repair streams the tombstone to node 3; its storage filter learns it from the streamed
            // SSTable, its node filter removes the key, and node 1 skips the key from then on.
            cluster.nodetool(3, "repair", "-full", "ks2");
            long deadline = System.nanoTime() + Duration.ofSeconds(60).toNanos();
            while (cluster.jmx(1).metric("ks2", "needle", "NodeSkipsOne") == skips0) {
                assertTrue(System.nanoTime() < deadline, "the key was not skipped within 60 s of the repair");
                assertEquals(List.of(), t.compare(s1, ConsistencyLevel.ONE, "SELECT pk, v FROM %s WHERE pk = ?", key));
                Thread.sleep(200);
            }
        }
    }
}
