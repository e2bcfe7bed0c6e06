package dev.needle.cassandra;

import java.util.Map;
import java.util.Optional;
import java.util.concurrent.Callable;
import org.apache.cassandra.cql3.Operator;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.ReadCommand;
import org.apache.cassandra.db.RegularAndStaticColumns;
import org.apache.cassandra.db.WriteContext;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.db.lifecycle.LifecycleNewTracker;
import org.apache.cassandra.db.marshal.AbstractType;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.IndexRegistry;
import org.apache.cassandra.index.transactions.IndexTransaction;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.SSTableFlushObserver;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.ClientState;

/**
 * The Needle storage filter, as a Cassandra custom index on a whole table:
 *
 * <pre>
 * CREATE CUSTOM INDEX ON ks.t () USING 'dev.needle.cassandra.NeedleIndex'
 *   WITH OPTIONS = {'filter': 'cuckoo', 'fp_rate': '0.001'};
 * </pre>
 *
 * It answers no queries itself: it tracks which partitions hold live data on this node (see
 * {@link TableKeyState}), and {@link NeedleQueryHandler} skips the reads of the others.
 */
public final class NeedleIndex implements Index {
    private final ColumnFamilyStore baseCfs;
    private IndexMetadata metadata;
    private final TableKeyState state;

    public NeedleIndex(ColumnFamilyStore baseCfs, IndexMetadata metadata) {
        this.baseCfs = baseCfs;
        this.metadata = metadata;
        this.state = new TableKeyState(baseCfs, NeedleOptions.parse(metadata.options), metadata.name);
    }

    /** Called by Cassandra (by reflection) on CREATE INDEX: rejects bad options with a clear message. */
    public static Map<String, String> validateOptions(Map<String, String> options, TableMetadata table) {
        if (table.isCounter()) {
            throw new org.apache.cassandra.exceptions.ConfigurationException(
                    "Needle does not index counter tables (" + table + ")");
        }
        NeedleOptions.parse(options);
        return NeedleOptions.unknown(options);
    }

    TableKeyState state() {
        return state;
    }

    @Override
    public Callable<?> getInitializationTask() {
        return () -> {
            state.initialize();
            return null;
        };
    }

    @Override
    public IndexMetadata getIndexMetadata() {
        return metadata;
    }

    @Override
    public Callable<?> getMetadataReloadTask(IndexMetadata indexMetadata) {
        this.metadata = indexMetadata;
        return null;
    }

    @Override
    public void register(IndexRegistry registry) {
        state.registered();
        registry.registerIndex(this);
        baseCfs.getTracker().subscribe(state);
        NeedleRegistry.put(baseCfs.metadata().id, state);
    }

    @Override
    public void unregister(IndexRegistry registry) {
        NeedleRegistry.remove(baseCfs.metadata().id, state);
        baseCfs.getTracker().unsubscribe(state);
        Index.super.unregister(registry);
    }

    @Override
    public Optional<ColumnFamilyStore> getBackingTable() {
        return Optional.empty();
    }

    @Override
    public Callable<?> getBlockingFlushTask() {
        return null;
    }

    @Override
    public Callable<?> getInvalidateTask() {
        return () -> {
            NeedleRegistry.remove(baseCfs.metadata().id, state);
            baseCfs.getTracker().unsubscribe(state);
            state.close(true);
            return null;
        };
    }

    @Override
    public Callable<?> getTruncateTask(long truncatedAt) {
        return () -> {
            state.truncate();
            return null;
        };
    }

    @Override
    public boolean shouldBuildBlocking() {
        return false;
    }

    @Override
    public SSTableFlushObserver getFlushObserver(Descriptor descriptor, LifecycleNewTracker tracker) {
        return state.observer(descriptor, tracker);
    }

    @Override
    public boolean dependsOn(ColumnMetadata column) {
        return false;
    }

    @Override
    public boolean supportsExpression(ColumnMetadata column, Operator operator) {
        return false;
    }

    @Override
    public AbstractType<?> customExpressionValueType() {
        return null;
    }

    @Override
    public RowFilter getPostIndexQueryFilter(RowFilter filter) {
        return filter;
    }

    @Override
    public long getEstimatedResultRows() {
        return 0;
    }

    @Override
    public void validate(PartitionUpdate update, ClientState state) throws InvalidRequestException {
        // every write is accepted: Needle only observes
    }

    @Override
    public Indexer indexerFor(DecoratedKey key, RegularAndStaticColumns columns, long nowInSec, WriteContext ctx,
                              IndexTransaction.Type transactionType, Memtable memtable) {
        // Only writes change what is live; compaction and cleanup are seen through their SSTables.
        return transactionType == IndexTransaction.Type.UPDATE ? state.indexer(key, memtable, nowInSec) : null;
    }

    @Override
    public Searcher searcherFor(ReadCommand command) {
        return null;
    }
}
