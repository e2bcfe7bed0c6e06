package dev.needle.cassandra;

import dev.needle.cassandra.base.CustomIndexBase;
import dev.needle.cassandra.base.NeedleOptions;
import dev.needle.cassandra.base.WritePathIndexGroup;
import dev.needle.cassandra.node.NodeFilters;
import dev.needle.cassandra.storage.FilterRegistry;
import dev.needle.cassandra.storage.StorageFilter;
import dev.needle.cassandra.views.NeedleViews;
import java.util.Collection;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.Callable;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.RegularAndStaticColumns;
import org.apache.cassandra.db.WriteContext;
import org.apache.cassandra.db.lifecycle.LifecycleNewTracker;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.IndexRegistry;
import org.apache.cassandra.index.SecondaryIndexBuilder;
import org.apache.cassandra.index.transactions.IndexTransaction;
import org.apache.cassandra.io.sstable.Component;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.SSTableFlushObserver;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.schema.TableMetadata;

/**
 * The Needle storage filter, as a Cassandra custom index on a whole table:
 *
 * <pre>
 * CREATE CUSTOM INDEX ON ks.t () USING 'dev.needle.cassandra.NeedleIndex'
 *   WITH OPTIONS = {'filter': 'cuckoo', 'fp_rate': '0.001'};
 * </pre>
 *
 * <p>It answers no queries itself: it tracks which partitions hold live data on this node (see
 * {@link StorageFilter}), and {@link NeedleQueryHandler} skips the reads of the others.
 *
 * <p>It is an SSTable-attached index, as Cassandra's own SAI is: it collects each SSTable's keys
 * while Cassandra writes the SSTable (flush, compaction, streaming), saves them as a component of
 * that SSTable (listed in its TOC, so snapshots, whole-SSTable streaming, {@code nodetool import}
 * and deletion carry it), and has Cassandra build the component for SSTables that arrive without
 * one. {@code nodetool rebuild_index} reads every SSTable again.
 */
public final class NeedleIndex extends CustomIndexBase {
    private final ColumnFamilyStore baseCfs;
    private final StorageFilter filter;
    private final Group.Key groupKey = new Group.Key(this);
    private final IndexBuildingSupport building = new IndexBuildingSupport() {
        @Override
        public SecondaryIndexBuilder getIndexBuildTask(
                ColumnFamilyStore cfs, Set<Index> indexes, Collection<SSTableReader> sstables, boolean isFullRebuild) {
            return filter.builder(sstables, isFullRebuild);
        }
    };

    public NeedleIndex(ColumnFamilyStore baseCfs, IndexMetadata metadata) {
        super(metadata);
        this.baseCfs = baseCfs;
        this.filter = new StorageFilter(baseCfs, NeedleOptions.parse(metadata.options), metadata.name);
        NeedleViews.register();
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

    /** The storage filter of this index's table. */
    public StorageFilter filter() {
        return filter;
    }

    @Override
    public Callable<?> getInitializationTask() {
        return () -> {
            filter.initialize();
            return null;
        };
    }

    @Override
    public void register(IndexRegistry registry) {
        registry.registerIndex(this, groupKey, () -> new NeedleIndexGroup(this));
        filter.registered();
        FilterRegistry.put(baseCfs.metadata().id, filter); // where reads find it
        NodeFilters.instance.register(baseCfs.metadata().id, filter); // its node filter, if on
    }

    /** The filter leaves the node's registries: reads and the node-filter publisher stop using it. */
    private void withdraw() {
        NodeFilters.instance.unregister(baseCfs.metadata().id, filter);
        FilterRegistry.remove(baseCfs.metadata().id, filter);
    }

    @Override
    public void unregister(IndexRegistry registry) {
        withdraw();
        registry.unregisterIndex(this, groupKey);
    }

    @Override
    public Callable<?> getBlockingFlushTask() {
        return null; // its per-SSTable state is written with each SSTable
    }

    @Override
    public Callable<?> getInvalidateTask() {
        return () -> {
            withdraw();
            filter.close(true);
            return null;
        };
    }

    @Override
    public Callable<?> getTruncateTask(long truncatedAt) {
        return null; // the tracker's notifications of the truncation already updated the filter
    }

    /** True, so that {@code nodetool rebuild_index} rebuilds it (through {@link #getBuildTaskSupport()}). */
    @Override
    public boolean shouldBuildBlocking() {
        return true;
    }

    @Override
    public boolean isSSTableAttached() {
        return true;
    }

    @Override
    public IndexBuildingSupport getBuildTaskSupport() {
        return building;
    }

    /** Whatever failed, the index keeps seeing writes: a write it missed would be a false negative. */
    @Override
    public LoadType getSupportedLoadTypeOnFailure(boolean isInitialBuild) {
        return LoadType.ALL;
    }

    @Override
    public Set<Component> getComponents() {
        return Set.of(filter.component());
    }

    @Override
    public SSTableFlushObserver getFlushObserver(Descriptor descriptor, LifecycleNewTracker tracker) {
        return filter.observer(descriptor, tracker);
    }

    @Override
    public Indexer indexerFor(
            DecoratedKey key,
            RegularAndStaticColumns columns,
            long nowInSec,
            WriteContext ctx,
            IndexTransaction.Type transactionType,
            Memtable memtable) {
        // Only writes change what is live; compaction and cleanup are seen through their SSTables.
        return transactionType == IndexTransaction.Type.UPDATE ? filter.indexer(key, memtable, nowInSec) : null;
    }

    /**
     * The index's group: Cassandra asks it to validate SSTables that arrive whole (by streaming or
     * {@code nodetool import}) before they go live.
     */
    static final class NeedleIndexGroup extends WritePathIndexGroup {
        private final NeedleIndex index;

        NeedleIndexGroup(NeedleIndex index) {
            super(index);
            this.index = index;
        }

        /**
         * Loads the saved filters of arriving SSTables. For whole-SSTable streaming ({@code
         * throwOnIncomplete}, where a false would fail the stream) a missing one is built here;
         * for an import, false makes Cassandra run the index build before the SSTables go live.
         */
        @Override
        public boolean validateSSTableAttachedIndexes(
                Collection<SSTableReader> sstables, boolean throwOnIncomplete, boolean validateChecksum) {
            return index.filter.validate(sstables, throwOnIncomplete);
        }
    }
}
