package dev.needle.cassandra.node;

import dev.needle.cassandra.base.CustomIndexBase;
import dev.needle.cassandra.base.NeedleOptions;
import dev.needle.cassandra.base.WritePathIndexGroup;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.cassandra.cql3.ColumnIdentifier;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.RegularAndStaticColumns;
import org.apache.cassandra.db.WriteContext;
import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.db.marshal.CompositeType;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.transactions.IndexTransaction;
import org.apache.cassandra.net.Message;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.NoSpamLogger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The receiving end of node-filter sync. Rows of {@link SyncKeyspace} that arrive as messages
 * are handed to {@link NodeFilters} as they arrive and neither written nor answered ({@link
 * #receive}). Any other row of the sync tables this node applies (one that arrived before node
 * filters started here) is handed over by this index, one on each sync table, whose write-path
 * hook sees it as it is applied. It answers no query. Nothing here may fail a write: a row it
 * cannot read is logged and dropped (a copy that misses it asks for a snapshot).
 */
public final class SyncIndex extends CustomIndexBase {
    private static final Logger logger = LoggerFactory.getLogger(SyncIndex.class);
    private static final NoSpamLogger noSpam = NoSpamLogger.getLogger(logger, 1, java.util.concurrent.TimeUnit.MINUTES);

    private final ColumnFamilyStore baseCfs;

    public SyncIndex(ColumnFamilyStore baseCfs, IndexMetadata metadata) {
        super(metadata);
        this.baseCfs = baseCfs;
    }

    /** A row of a sync table, read by column name. */
    static final class SyncRow {
        private final TableMetadata table;
        private final ByteBuffer[] partitionKey;
        private final Row row;

        SyncRow(TableMetadata table, DecoratedKey key, Row row) {
            this.table = table;
            AbstractType<?> type = table.partitionKeyType;
            this.partitionKey =
                    type instanceof CompositeType c ? c.split(key.getKey()) : new ByteBuffer[] {key.getKey()};
            this.row = row;
        }

        String table() {
            return table.name;
        }

        ByteBuffer get(String column) {
            ColumnMetadata c = table.getColumn(ColumnIdentifier.getInterned(column, true));
            if (c == null) {
                throw new IllegalArgumentException("no column " + column + " in " + table);
            }
            if (c.isPartitionKey()) {
                return partitionKey[c.position()];
            }
            if (c.isClusteringColumn()) {
                return row.clustering().bufferAt(c.position());
            }
            Cell<?> cell = row.getCell(c);
            return cell == null || cell.isTombstone() ? null : cell.buffer();
        }

        <T> T get(String column, AbstractType<T> type) {
            ByteBuffer b = get(column);
            return b == null ? null : type.compose(b);
        }
    }

    /**
     * Whether an arriving message goes on to Cassandra's handler (a predicate of {@link
     * org.apache.cassandra.net.MessagingService#inboundSink}, run on the thread of the verb's
     * stage): a mutation of the sync keyspace does not. Its rows are handed to the copies here,
     * on the mutation stage's thread that would have applied them. Applying one cost the receiver
     * a memtable insert and later flushes and compactions, and its response cost both nodes a
     * message that the owner, sending fire and forget, dropped: a message and its response cost
     * about the same CPU whatever they carry, so the sync costs about half as many.
     */
    static boolean receive(Message<?> message) {
        Mutation m = SyncKeyspace.syncMutation(message);
        if (m == null) {
            return true;
        }
        long nowInSec = FBUtilities.nowInSeconds();
        for (PartitionUpdate update : m.getPartitionUpdates()) {
            for (Row row : update) {
                deliver(update.metadata(), update.partitionKey(), row, nowInSec);
            }
        }
        return false;
    }

    /** Hands a row of a sync table that is live at {@code nowInSec} to the copies. */
    private static void deliver(TableMetadata table, DecoratedKey key, Row row, long nowInSec) {
        if (row.isStatic() || !row.hasLiveData(nowInSec, false)) {
            return;
        }
        try {
            NodeFilters.instance.received(new SyncRow(table, key, row));
        } catch (Throwable t) {
            noSpam.warn("Needle could not apply a row of {}.{}: {}", table.keyspace, table.name, t.toString(), t);
        }
    }

    @Override
    public Indexer indexerFor(
            DecoratedKey key,
            RegularAndStaticColumns columns,
            long nowInSec,
            WriteContext ctx,
            IndexTransaction.Type transactionType,
            Memtable memtable) {
        if (transactionType != IndexTransaction.Type.UPDATE) {
            return null;
        }
        return new Indexer() {
            @Override
            public void insertRow(Row row) {
                deliver(row);
            }

            @Override
            public void updateRow(Row oldRow, Row newRow) {
                deliver(newRow);
            }

            private void deliver(Row row) {
                SyncIndex.deliver(baseCfs.metadata(), key, row, nowInSec);
            }
        };
    }

    /** Called by Cassandra on CREATE INDEX. */
    public static Map<String, String> validateOptions(Map<String, String> options, TableMetadata table) {
        if (!table.keyspace.equals(SyncKeyspace.NAME)) {
            throw new org.apache.cassandra.exceptions.ConfigurationException(
                    SyncIndex.class.getSimpleName() + " belongs on the tables of " + SyncKeyspace.NAME + " only");
        }
        return NeedleOptions.unknownBeyond(options);
    }

    @Override
    public Callable<?> getInitializationTask() {
        return null;
    }

    @Override
    public void register(org.apache.cassandra.index.IndexRegistry registry) {
        registry.registerIndex(this, new Index.Group.Key(this), () -> new WritePathIndexGroup(this));
    }

    @Override
    public Callable<?> getBlockingFlushTask() {
        return null;
    }

    @Override
    public Callable<?> getInvalidateTask() {
        return null;
    }

    @Override
    public Callable<?> getTruncateTask(long truncatedAt) {
        return null;
    }

    @Override
    public boolean shouldBuildBlocking() {
        return false;
    }
}
