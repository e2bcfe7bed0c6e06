package dev.needle.cassandra.views;

import dev.needle.cassandra.node.NodeFilters;
import dev.needle.cassandra.storage.FilterRegistry;
import dev.needle.cassandra.storage.FilterStats;
import dev.needle.cassandra.storage.NeedleMetrics;
import dev.needle.cassandra.storage.StorageFilter;
import java.nio.ByteBuffer;
import java.util.List;
import java.util.concurrent.atomic.AtomicBoolean;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.marshal.BooleanType;
import org.apache.cassandra.db.marshal.CompositeType;
import org.apache.cassandra.db.marshal.DoubleType;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.marshal.UUIDType;
import org.apache.cassandra.db.virtual.AbstractVirtualTable;
import org.apache.cassandra.db.virtual.SimpleDataSet;
import org.apache.cassandra.db.virtual.VirtualKeyspace;
import org.apache.cassandra.db.virtual.VirtualKeyspaceRegistry;
import org.apache.cassandra.db.virtual.VirtualTable;
import org.apache.cassandra.dht.LocalPartitioner;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableId;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.utils.FBUtilities;

/**
 * The {@code needle_views} virtual keyspace, what an operator reads to see what Needle does on a
 * node (as {@code system_views} does for Cassandra's own indexes):
 *
 * <ul>
 *   <li>{@code storage_filters}: one row per Needle index: ready or not, keys by state, filter
 *       bytes, SSTables with and without a filter, lookups skipped and passed, caught errors;</li>
 *   <li>{@code key_states}: why a read of one key would or would not be skipped, source by source:
 *       {@code SELECT * FROM needle_views.key_states WHERE keyspace_name = 'ks' AND table_name = 't'
 *       AND partition_key = '42'} (the key as CQL would print it; a composite key as {@code a:b}).</li>
 *   <li>{@code node_filters}: for each table with node filters, the filter this node publishes and
 *       its copy of every other node's: epoch, sequence number, age, keys, bytes, trusted or not.</li>
 *   <li>{@code range_indexes}: one row per ordered index: ready or not, leaves, entries, directory
 *       version, the range queries this node answered by each strategy and the planner's cost
 *       model of each;</li>
 *   <li>{@code range_plans}: the last range queries this node coordinated on each ordered index:
 *       strategy, why, rows estimated and returned, latency.</li>
 * </ul>
 *
 * Virtual tables are local: each node answers for itself.
 */
public final class NeedleViews {
    public static final String KEYSPACE = "needle_views";
    private static final AtomicBoolean REGISTERED = new AtomicBoolean();

    private NeedleViews() {}

    /** Registers the keyspace once per node. */
    public static synchronized void register() {
        if (!REGISTERED.get()) {
            List<VirtualTable> tables = List.of(
                    new StorageFilters(),
                    new KeyStates(),
                    new NodeFilterCopies(),
                    new RangeViews.Indexes(),
                    new RangeViews.Plans());
            VirtualKeyspaceRegistry.instance.register(new VirtualKeyspace(KEYSPACE, tables));
            REGISTERED.set(true);
        }
    }

    static final class StorageFilters extends AbstractVirtualTable {
        StorageFilters() {
            super(TableMetadata.builder(KEYSPACE, "storage_filters")
                    .comment("Needle storage filters on this node, one row per index")
                    .kind(TableMetadata.Kind.VIRTUAL)
                    .partitioner(new LocalPartitioner(UTF8Type.instance))
                    .addPartitionKeyColumn("keyspace_name", UTF8Type.instance)
                    .addClusteringColumn("table_name", UTF8Type.instance)
                    .addClusteringColumn("index_name", UTF8Type.instance)
                    .addRegularColumn("filter", UTF8Type.instance)
                    .addRegularColumn("fp_rate", DoubleType.instance)
                    .addRegularColumn("ready", BooleanType.instance)
                    .addRegularColumn("memtable_keys", LongType.instance)
                    .addRegularColumn("untracked_memtables", Int32Type.instance)
                    .addRegularColumn("sstables_with_filter", Int32Type.instance)
                    .addRegularColumn("sstables_without_filter", Int32Type.instance)
                    .addRegularColumn("live_keys", LongType.instance)
                    .addRegularColumn("deleted_keys", LongType.instance)
                    .addRegularColumn("partition_tombstones", LongType.instance)
                    .addRegularColumn("proven_dead_keys", LongType.instance)
                    .addRegularColumn("filter_bytes", LongType.instance)
                    .addRegularColumn("lookups_skipped", LongType.instance)
                    .addRegularColumn("lookups_passed", LongType.instance)
                    .addRegularColumn("failures", LongType.instance)
                    .build());
        }

        @Override
        public DataSet data() {
            SimpleDataSet rows = new SimpleDataSet(metadata());
            for (StorageFilter f : FilterRegistry.all()) {
                FilterStats s = f.stats();
                NeedleMetrics m = f.metrics();
                rows.row(f.keyspace(), f.table(), f.indexName())
                        .column("filter", f.options().filter.name().toLowerCase(java.util.Locale.ROOT))
                        .column("fp_rate", f.options().fpRate)
                        .column("ready", s.ready())
                        .column("memtable_keys", s.memtableKeys())
                        .column("untracked_memtables", (int) s.untrackedMemtables())
                        .column("sstables_with_filter", (int) s.sstablesWithFilter())
                        .column("sstables_without_filter", (int) s.sstablesWithoutFilter())
                        .column("live_keys", s.liveKeys())
                        .column("deleted_keys", s.deletedKeys())
                        .column("partition_tombstones", s.partitionTombstones())
                        .column("proven_dead_keys", s.provenDeadKeys())
                        .column("filter_bytes", s.filterBytes())
                        .column("lookups_skipped", m.lookupsSkipped.getCount())
                        .column("lookups_passed", m.lookupsPassed.getCount())
                        .column("failures", m.failures.getCount());
            }
            return rows;
        }
    }

    static final class KeyStates extends AbstractVirtualTable {
        private static final CompositeType KEY =
                CompositeType.getInstance(UTF8Type.instance, UTF8Type.instance, UTF8Type.instance);

        KeyStates() {
            super(TableMetadata.builder(KEYSPACE, "key_states")
                    .comment("Why a read of one partition key would or would not be skipped on this node; "
                            + "query with keyspace_name, table_name and partition_key")
                    .kind(TableMetadata.Kind.VIRTUAL)
                    .partitioner(new LocalPartitioner(KEY))
                    .addPartitionKeyColumn("keyspace_name", UTF8Type.instance)
                    .addPartitionKeyColumn("table_name", UTF8Type.instance)
                    .addPartitionKeyColumn("partition_key", UTF8Type.instance)
                    .addClusteringColumn("line", Int32Type.instance)
                    .addRegularColumn("index_name", UTF8Type.instance)
                    .addRegularColumn("source", UTF8Type.instance)
                    .addRegularColumn("state", UTF8Type.instance)
                    .addRegularColumn("detail", UTF8Type.instance)
                    .build());
        }

        /** Without a key there is nothing to list: every key of every table would qualify. */
        @Override
        public DataSet data() {
            return new SimpleDataSet(metadata());
        }

        @Override
        public DataSet data(DecoratedKey partitionKey) {
            SimpleDataSet rows = new SimpleDataSet(metadata());
            ByteBuffer[] parts = KEY.split(partitionKey.getKey());
            String ks = UTF8Type.instance.compose(parts[0]);
            String table = UTF8Type.instance.compose(parts[1]);
            String keyText = UTF8Type.instance.compose(parts[2]);
            int line = 0;
            for (StorageFilter f : FilterRegistry.all()) {
                if (!f.keyspace().equals(ks) || !f.table().equals(table)) {
                    continue;
                }
                ByteBuffer key;
                try {
                    key = f.partitionKeyType().fromString(keyText);
                } catch (RuntimeException e) {
                    throw new InvalidRequestException("'" + keyText + "' is not a partition key of " + ks + "." + table
                            + " (" + f.partitionKeyType().asCQL3Type() + "): " + e.getMessage());
                }
                for (String[] l : f.explain(key, FBUtilities.nowInSeconds())) {
                    rows.row(ks, table, keyText, line++)
                            .column("index_name", f.indexName())
                            .column("source", l[0])
                            .column("state", l[1])
                            .column("detail", l[2]);
                }
            }
            return rows;
        }
    }

    static final class NodeFilterCopies extends AbstractVirtualTable {
        NodeFilterCopies() {
            super(TableMetadata.builder(KEYSPACE, "node_filters")
                    .comment("Node filters: the one this node publishes per table, and its copies of the others'")
                    .kind(TableMetadata.Kind.VIRTUAL)
                    .partitioner(new LocalPartitioner(UTF8Type.instance))
                    .addPartitionKeyColumn("keyspace_name", UTF8Type.instance)
                    .addClusteringColumn("table_name", UTF8Type.instance)
                    .addClusteringColumn("owner", UUIDType.instance)
                    .addRegularColumn("role", UTF8Type.instance)
                    .addRegularColumn("epoch", LongType.instance)
                    .addRegularColumn("seq", LongType.instance)
                    .addRegularColumn("age_ms", LongType.instance)
                    .addRegularColumn("keys", LongType.instance)
                    .addRegularColumn("bytes", LongType.instance)
                    .addRegularColumn("trusted", BooleanType.instance)
                    .addRegularColumn("state", UTF8Type.instance)
                    .addRegularColumn("receivers", Int32Type.instance)
                    .build());
        }

        @Override
        public DataSet data() {
            SimpleDataSet rows = new SimpleDataSet(metadata());
            for (NodeFilters.CopyStatus c : NodeFilters.instance.status()) {
                TableMetadata t = Schema.instance.getTableMetadata(TableId.fromUUID(c.table()));
                if (t == null || c.owner() == null) {
                    continue;
                }
                rows.row(t.keyspace, t.name, c.owner())
                        .column("role", c.own() ? "published" : "copy")
                        .column("epoch", c.epoch())
                        .column("seq", c.seq())
                        .column("age_ms", c.ageMillis())
                        .column("keys", c.keys())
                        .column("bytes", c.bytes())
                        .column("trusted", c.trusted())
                        .column("state", c.state())
                        .column("receivers", c.receivers());
            }
            return rows;
        }
    }
}
