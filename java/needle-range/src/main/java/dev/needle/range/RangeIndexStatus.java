package dev.needle.range;

import com.datastax.oss.driver.api.core.CqlIdentifier;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.DefaultConsistencyLevel;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import java.time.Duration;
import java.util.List;

/**
 * What a client can see of a Needle ordered index ({@code NeedleRangeIndex}) from the tables it
 * keeps next to its base table: whether every node has indexed the rows the table held when the
 * index was created (until then, range queries are answered the stock way), and how many leaves
 * it has and whether one is splitting. For scripts and tests that create an index and then
 * measure it.
 */
public final class RangeIndexStatus {
    private final CqlSession session;
    private final String nodesTable;
    private final String directoryTable;

    private RangeIndexStatus(CqlSession session, String keyspace, String index) {
        this.session = session;
        String ks = CqlIdentifier.fromInternal(keyspace).asCql(true);
        this.nodesTable = ks + "."
                + CqlIdentifier.fromInternal("needle_rx_" + index + "_nodes").asCql(true);
        this.directoryTable = ks + "."
                + CqlIdentifier.fromInternal("needle_rx_" + index + "_dir").asCql(true);
    }

    /** The status of index {@code index} (its name as CQL stores it) in {@code keyspace}. */
    public static RangeIndexStatus of(CqlSession session, String keyspace, String index) {
        return new RangeIndexStatus(session, keyspace, index);
    }

    /** Nodes that have indexed the table's earlier rows; 0 while the index's tables are being created. */
    public int nodesBuilt() {
        try {
            return (int) session.execute("SELECT built FROM " + nodesTable).all().stream()
                    .filter(row -> row.getBoolean("built"))
                    .count();
        } catch (RuntimeException e) {
            return 0; // the index's tables do not exist yet
        }
    }

    /**
     * Waits until {@code nodes} nodes have indexed the table's earlier rows.
     *
     * @throws IllegalStateException if they have not within {@code timeout}
     */
    public void awaitBuilt(int nodes, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int built;
        while ((built = nodesBuilt()) < nodes) {
            if (System.nanoTime() > deadline) {
                throw new IllegalStateException("the range index's rows were built on " + built + " of " + nodes
                        + " nodes after " + timeout.toSeconds() + " s (" + nodesTable + ")");
            }
            Thread.sleep(500);
        }
    }

    /**
     * Waits until no leaf is splitting and the number of leaves has not changed for {@code
     * quiet} (a load fills leaves faster than they split); returns the number of leaves.
     *
     * @throws IllegalStateException if the leaves are still changing after {@code timeout}
     */
    public int awaitLeavesSettled(Duration quiet, Duration timeout) throws InterruptedException {
        long deadline = System.nanoTime() + timeout.toNanos();
        int leaves = -1;
        long stableSince = System.nanoTime();
        while (System.nanoTime() < deadline) {
            List<Row> dir = session.execute(
                            SimpleStatement.newInstance("SELECT state FROM " + directoryTable + " WHERE part = 0")
                                    .setConsistencyLevel(DefaultConsistencyLevel.QUORUM))
                    .all();
            boolean splitting = dir.stream().anyMatch(row -> !"live".equals(row.getString("state")));
            if (splitting || dir.size() != leaves) {
                leaves = dir.size();
                stableSince = System.nanoTime();
            } else if (System.nanoTime() - stableSince > quiet.toNanos()) {
                return leaves;
            }
            Thread.sleep(1000);
        }
        throw new IllegalStateException("the range index was still splitting leaves after " + timeout.toMinutes()
                + " minutes (" + directoryTable + ")");
    }
}
