package dev.needle.bench;

import com.datastax.oss.driver.api.core.ConsistencyLevel;
import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.BatchStatement;
import com.datastax.oss.driver.api.core.cql.BatchStatementBuilder;
import com.datastax.oss.driver.api.core.cql.BatchType;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.datastax.oss.driver.api.core.cql.ResultSet;
import com.datastax.oss.driver.api.core.cql.Row;
import com.datastax.oss.driver.api.core.cql.SimpleStatement;
import java.nio.ByteBuffer;
import java.util.SplittableRandom;

/**
 * {@link Client} for one Cassandra table {@code (pk bigint, ck int, v blob, PRIMARY KEY (pk, ck))}
 * through the DataStax Java driver 4.x. Which node coordinates is the session's load-balancing
 * policy (see {@link dev.needle.testkit.LocalCluster#session(int, boolean)}). Row values are
 * slices of one random buffer: incompressible, and cheap to produce.
 */
public final class CassandraClient implements Client {
    private static final int VALUE_POOL = 1 << 20;

    private final CqlSession session;
    private final boolean ownsSession;
    private final int rowBytes;
    private final int rowsPerBatch;
    private final ConsistencyLevel consistency;
    private final byte[] values;
    private final PreparedStatement insert;
    private final PreparedStatement select;
    private final PreparedStatement selectRange;
    private final PreparedStatement deletePartition;
    private final PreparedStatement deleteRow;

    /**
     * @param ownsSession whether {@link #close()} closes the session
     */
    public CassandraClient(
            CqlSession session,
            boolean ownsSession,
            String keyspace,
            String table,
            int rowBytes,
            ConsistencyLevel consistency,
            long seed) {
        this.session = session;
        this.ownsSession = ownsSession;
        this.rowBytes = rowBytes;
        // Cassandra rejects batches above 50 KiB by default (batch_size_fail_threshold): stay under 32 KiB.
        this.rowsPerBatch = Math.max(1, 32 * 1024 / (rowBytes + 32));
        this.consistency = consistency;
        this.values = new byte[VALUE_POOL + rowBytes];
        new SplittableRandom(seed).nextBytes(values);
        String t = keyspace + "." + table;
        insert = prepare("INSERT INTO " + t + " (pk, ck, v) VALUES (?, ?, ?)", consistency);
        select = prepare("SELECT ck, v FROM " + t + " WHERE pk = ?", consistency);
        selectRange = prepare("SELECT ck, v FROM " + t + " WHERE pk = ? AND ck >= ? AND ck <= ?", consistency);
        deletePartition = prepare("DELETE FROM " + t + " WHERE pk = ?", consistency);
        deleteRow = prepare("DELETE FROM " + t + " WHERE pk = ? AND ck = ?", consistency);
    }

    private PreparedStatement prepare(String cql, ConsistencyLevel consistency) {
        return session.prepare(SimpleStatement.newInstance(cql).setConsistencyLevel(consistency));
    }

    private ByteBuffer value(long key, int row) {
        int off = (int) Long.remainderUnsigned(KeyChooser.mix64(key * 31 + row), VALUE_POOL);
        return ByteBuffer.wrap(values, off, rowBytes).slice();
    }

    @Override
    public void insert(long key, int first, int rows) {
        if (rows == 1) {
            session.execute(insert.bind(key, first, value(key, first)));
            return;
        }
        for (int start = first; start < first + rows; start += rowsPerBatch) {
            BatchStatementBuilder b = BatchStatement.builder(BatchType.UNLOGGED);
            for (int r = start; r < Math.min(first + rows, start + rowsPerBatch); r++) {
                b.addStatement(insert.bind(key, r, value(key, r)));
            }
            session.execute(b.setConsistencyLevel(consistency).build());
        }
    }

    @Override
    public int lookup(long key) {
        return count(session.execute(select.bind(key)));
    }

    @Override
    public int range(long key, int from, int to) {
        return count(session.execute(selectRange.bind(key, from, to)));
    }

    private static int count(ResultSet rs) {
        int n = 0;
        for (Row ignored : rs) {
            n++;
        }
        return n;
    }

    @Override
    public void update(long key, int row) {
        session.execute(insert.bind(key, row, value(key ^ 0x5bd1e995L, row)));
    }

    @Override
    public void deletePartition(long key) {
        session.execute(deletePartition.bind(key));
    }

    @Override
    public void deleteRows(long key, int first, int rows) {
        // Row tombstones are small: a few thousand fit one batch under the size threshold.
        for (int start = first; start < first + rows; start += 1000) {
            BatchStatementBuilder b = BatchStatement.builder(BatchType.UNLOGGED);
            for (int r = start; r < Math.min(first + rows, start + 1000); r++) {
                b.addStatement(deleteRow.bind(key, r));
            }
            session.execute(b.setConsistencyLevel(consistency).build());
        }
    }

    @Override
    public void close() {
        if (ownsSession) {
            session.close();
        }
    }
}
