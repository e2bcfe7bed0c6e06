package dev.needle.cassandra;

import dev.needle.cassandra.base.CustomIndexBase;
import dev.needle.cassandra.range.KeyList;
import dev.needle.cassandra.range.RangeIndex;
import dev.needle.cassandra.range.RangeIndexes;
import java.nio.ByteBuffer;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.Callable;
import org.apache.cassandra.cql3.Operator;
import org.apache.cassandra.cql3.QueryHandler;
import org.apache.cassandra.cql3.statements.schema.IndexTarget;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.PartitionRangeReadCommand;
import org.apache.cassandra.db.ReadCommand;
import org.apache.cassandra.db.ReadExecutionController;
import org.apache.cassandra.db.RegularAndStaticColumns;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.WriteContext;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.SingletonUnfilteredPartitionIterator;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.exceptions.ConfigurationException;
import org.apache.cassandra.index.IndexRegistry;
import org.apache.cassandra.index.TargetParser;
import org.apache.cassandra.index.transactions.IndexTransaction;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.ClientState;

/**
 * Needle's ordered index on one column, for range queries (docs/range-queries.md):
 *
 * <pre>
 * CREATE CUSTOM INDEX events_k ON app.events (k) USING 'dev.needle.cassandra.NeedleRangeIndex'
 *   WITH OPTIONS = {'leaf_size': '20000'};
 * SELECT * FROM app.events WHERE k &gt;= 0.25 AND k &lt; 0.26;
 * </pre>
 *
 * <p>Declaring it makes such a SELECT valid CQL; {@link NeedleQueryHandler} then answers it from
 * the index's entries (in tables next to the base table) and writes an entry for every value a
 * write sets, before the write. This class only declares what the index supports and, when the
 * query handler sends a query the stock way (the scan, or before every node has indexed its old
 * rows), answers each node's part by reading the node's data and filtering it.
 */
public final class NeedleRangeIndex extends CustomIndexBase {
    private final ColumnFamilyStore baseCfs;
    private final ColumnMetadata column;
    private final Group.Key groupKey = new Group.Key(this);

    public NeedleRangeIndex(ColumnFamilyStore baseCfs, IndexMetadata metadata) {
        super(metadata);
        this.baseCfs = baseCfs;
        this.column = TargetParser.parse(baseCfs.metadata(), metadata).left;
    }

    /** Called by Cassandra (by reflection) on CREATE INDEX: rejects what the index cannot do, saying why. */
    public static Map<String, String> validateOptions(Map<String, String> options, TableMetadata table) {
        QueryHandler handler = ClientState.getCQLQueryHandler();
        if (!(handler instanceof NeedleQueryHandler)) {
            throw new ConfigurationException("NeedleRangeIndex needs Needle's query handler on every node (it writes"
                    + " the index entries): start Cassandra with"
                    + " -Dcassandra.custom_query_handler_class=dev.needle.cassandra.NeedleQueryHandler");
        }
        String target = options.get(IndexTarget.TARGET_OPTION_NAME);
        var parsed = target == null ? null : TargetParser.parse(table, target);
        ColumnMetadata c = parsed == null ? null : parsed.left;
        if (c == null) {
            throw new ConfigurationException("NeedleRangeIndex indexes one column: CREATE CUSTOM INDEX ... ON " + table
                    + " (column) USING 'dev.needle.cassandra.NeedleRangeIndex'");
        }
        if (!c.isRegular() || c.type.isMultiCell() || table.isCounter()) {
            throw new ConfigurationException("NeedleRangeIndex indexes a regular column of a non-counter table, not a"
                    + " primary key, static or non-frozen collection column (" + c.name + " of " + table + ")");
        }
        Map<String, String> unknown = new HashMap<>(options);
        unknown.remove(IndexTarget.TARGET_OPTION_NAME);
        unknown.remove(IndexTarget.CUSTOM_INDEX_OPTION_NAME);
        String leafSize = unknown.remove(RangeIndexes.LEAF_SIZE_OPTION);
        if (leafSize != null) {
            RangeIndexes.parseLeafSize(leafSize);
        }
        return unknown;
    }

    /** Nothing to build in Cassandra's sense: {@link RangeIndexes} indexes this node's old rows itself. */
    @Override
    public Callable<?> getInitializationTask() {
        return null;
    }

    @Override
    public void register(IndexRegistry registry) {
        registry.registerIndex(this, groupKey, () -> new KeyList.IndexGroup(this));
        RangeIndexes.register(baseCfs.metadata(), column, getIndexMetadata());
    }

    @Override
    public void unregister(IndexRegistry registry) {
        RangeIndexes.unregister(baseCfs.metadata(), getIndexMetadata());
        registry.unregisterIndex(this, groupKey);
    }

    @Override
    public Callable<?> getBlockingFlushTask() {
        return null;
    }

    /** DROP INDEX: the node stops using it; its tables stay until dropped (their names are in the docs). */
    @Override
    public Callable<?> getInvalidateTask() {
        return () -> {
            RangeIndexes.unregister(baseCfs.metadata(), getIndexMetadata());
            return null;
        };
    }

    /** TRUNCATE leaves entries without rows: stale, dropped by reads. */
    @Override
    public Callable<?> getTruncateTask(long truncatedAt) {
        return null;
    }

    @Override
    public boolean shouldBuildBlocking() {
        return false;
    }

    @Override
    public boolean dependsOn(ColumnMetadata c) {
        return column.equals(c);
    }

    /**
     * Range and equality restrictions on the column, unless Cassandra's SAI also indexes it; and
     * the key lists the query handler sends in a custom expression to read the rows an index
     * answer names ({@code RangeRead}).
     *
     * <p>With SAI on the column, this index leaves the column's restrictions to SAI, so that
     * Cassandra's own way of answering (the planner's "sai", the payload's "stock") is SAI's:
     * Cassandra picks the index plan with the fewest estimated rows, and SAI's estimate is
     * {@code Long.MAX_VALUE} unless {@code prioritize_sai_over_legacy_index} is set, so a plan of
     * this index would win. The query handler's own ways (this index's answers, the parallel scan)
     * do not go through Cassandra's index plans.
     */
    @Override
    public boolean supportsExpression(ColumnMetadata c, Operator operator) {
        if (KeyList.isExpressionColumn(c, baseCfs.metadata(), getIndexMetadata())) {
            return operator == Operator.EQ;
        }
        return column.equals(c)
                && switch (operator) {
                    case EQ, GT, GTE, LT, LTE -> true;
                    default -> false;
                }
                && !RangeIndex.saiIndexes(baseCfs, column);
    }

    /** Large: Cassandra's legacy secondary indexes on the column, if any, are preferred. */
    @Override
    public long getEstimatedResultRows() {
        return Long.MAX_VALUE / 2;
    }

    /** Entries are written by the query handler before the write, not here (a replica's write path). */
    @Override
    public Indexer indexerFor(
            DecoratedKey key,
            RegularAndStaticColumns columns,
            long nowInSec,
            WriteContext ctx,
            IndexTransaction.Type transactionType,
            Memtable memtable) {
        return null;
    }

    /**
     * A key list's rows ({@code RangeRead} fetching an index answer's rows); or the stock way: this
     * node's data in the command's range, filtered afterwards by the restrictions.
     */
    @Override
    public Searcher searcherFor(ReadCommand command) {
        return new Searcher() {
            @Override
            public ReadCommand command() {
                return command;
            }

            @Override
            public UnfilteredPartitionIterator search(ReadExecutionController controller) {
                if (command instanceof PartitionRangeReadCommand range) {
                    ByteBuffer keys = KeyList.keysOf(range.rowFilter(), getIndexMetadata());
                    return keys != null
                            ? KeyList.replicaRows(baseCfs, range, keys, controller)
                            : range.queryStorage(baseCfs, controller);
                }
                SinglePartitionReadCommand single = (SinglePartitionReadCommand) command;
                return new SingletonUnfilteredPartitionIterator(single.queryMemtableAndDisk(baseCfs, controller));
            }
        };
    }
}
