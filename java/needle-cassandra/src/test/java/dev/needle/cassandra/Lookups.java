package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import dev.needle.testkit.LocalCluster;
import dev.needle.testkit.NodeJmx;

/** Assertions on whether Needle skipped a read, from its counters (not from a trace event whose absence proves nothing). */
final class Lookups {
    private Lookups() {}

    /** {@code read} made exactly one lookup of {@code ks.table} through {@code node}, and Needle answered it without reading. */
    static void assertSkipped(LocalCluster cluster, int node, String ks, String table, String what, NodeJmx.Action read)
            throws Exception {
        NodeJmx.LookupCounts c = cluster.jmx(node).lookups(ks, table, read);
        assertEquals(new NodeJmx.LookupCounts(1, 0), c, what + ": expected the read to be skipped");
    }

    /** {@code read} made exactly one lookup of {@code ks.table} through {@code node}, and Needle passed it to Cassandra. */
    static void assertRead(LocalCluster cluster, int node, String ks, String table, String what, NodeJmx.Action read)
            throws Exception {
        NodeJmx.LookupCounts c = cluster.jmx(node).lookups(ks, table, read);
        assertEquals(new NodeJmx.LookupCounts(0, 1), c, what + ": expected the read to go to Cassandra");
    }

    /** What {@code needle_views.key_states} says of a key on the node {@code session} talks to, one line per source. */
    static String explain(com.datastax.oss.driver.api.core.CqlSession session, String ks, String table, String key) {
        StringBuilder b = new StringBuilder();
        for (com.datastax.oss.driver.api.core.cql.Row r :
                session.execute(com.datastax.oss.driver.api.core.cql.SimpleStatement.newInstance(
                        "SELECT source, state, detail FROM needle_views.key_states WHERE keyspace_name = ? AND table_name = ? "
                                + "AND partition_key = ?",
                        ks,
                        table,
                        key))) {
            b.append("\n  ")
                    .append(r.getString(0))
                    .append(": ")
                    .append(r.getString(1))
                    .append(" (")
                    .append(r.getString(2))
                    .append(')');
        }
        return b.toString();
    }

    /** Polls until a read through {@code node} is skipped; fails after {@code seconds}. */
    static void awaitSkipped(
            LocalCluster cluster, int node, String ks, String table, String what, int seconds, NodeJmx.Action read)
            throws Exception {
        long deadline = System.nanoTime() + seconds * 1_000_000_000L;
        NodeJmx.LookupCounts last = null;
        while (System.nanoTime() < deadline) {
            last = cluster.jmx(node).lookups(ks, table, read);
            if (last.skipped() == 1) {
                return;
            }
            Thread.sleep(200);
        }
        assertTrue(false, what + ": not skipped within " + seconds + " s (last " + last + ")");
    }
}
