package dev.needle.cassandra.views;

import dev.needle.cassandra.range.LeafDirectory;
import dev.needle.cassandra.range.RangeIndex;
import dev.needle.cassandra.range.RangeIndexes;
import dev.needle.cassandra.range.RangePlanner;
import dev.needle.cassandra.range.RangePlans;
import java.nio.ByteBuffer;
import java.util.Date;
import java.util.List;
import java.util.Locale;
import org.apache.cassandra.db.marshal.BooleanType;
import org.apache.cassandra.db.marshal.DoubleType;
import org.apache.cassandra.db.marshal.Int32Type;
import org.apache.cassandra.db.marshal.LongType;
import org.apache.cassandra.db.marshal.TimestampType;
import org.apache.cassandra.db.marshal.UTF8Type;
import org.apache.cassandra.db.virtual.AbstractVirtualTable;
import org.apache.cassandra.db.virtual.SimpleDataSet;
import org.apache.cassandra.dht.LocalPartitioner;
import org.apache.cassandra.schema.TableMetadata;

/** The ordered indexes' virtual tables of {@code needle_views} (see {@link NeedleViews}). */
final class RangeViews {
    private RangeViews() {}

    /** {@code range_indexes}: one row per ordered index on this node. */
    static final class Indexes extends AbstractVirtualTable {
        Indexes() {
            super(TableMetadata.builder(NeedleViews.KEYSPACE, "range_indexes")
                    .comment("Needle ordered indexes on this node: state, leaves, and how their range queries ran")
                    .kind(TableMetadata.Kind.VIRTUAL)
                    .partitioner(new LocalPartitioner(UTF8Type.instance))
                    .addPartitionKeyColumn("keyspace_name", UTF8Type.instance)
                    .addClusteringColumn("table_name", UTF8Type.instance)
                    .addClusteringColumn("index_name", UTF8Type.instance)
                    .addRegularColumn("column_name", UTF8Type.instance)
                    .addRegularColumn("ready", BooleanType.instance)
                    .addRegularColumn("leaf_size", Int32Type.instance)
                    .addRegularColumn("leaves", Int32Type.instance)
                    .addRegularColumn("entries", LongType.instance)
                    .addRegularColumn("directory_version", LongType.instance)
                    .addRegularColumn("queries_by_index", LongType.instance)
                    .addRegularColumn("queries_by_scan", LongType.instance)
                    .addRegularColumn("queries_by_sai", LongType.instance)
                    .addRegularColumn("queries_by_client_scan", LongType.instance)
                    .addRegularColumn("switches_to_stock", LongType.instance)
                    .addRegularColumn("stale_entries_removed", LongType.instance)
                    .addRegularColumn("deleted_entries_removed", LongType.instance)
                    .addRegularColumn("keys_read_by_key_list", LongType.instance)
                    .addRegularColumn("keys_read_by_partition", LongType.instance)
                    .addRegularColumn("model_index", UTF8Type.instance)
                    .addRegularColumn("model_scan", UTF8Type.instance)
                    .addRegularColumn("model_sai", UTF8Type.instance)
                    .addRegularColumn("model_client_scan", UTF8Type.instance)
                    .build());
        }

        @Override
        public DataSet data() {
            SimpleDataSet rows = new SimpleDataSet(metadata());
            for (RangeIndex index : RangeIndexes.all()) {
                LeafDirectory<ByteBuffer> d = index.directory();
                RangePlanner planner = index.planner();
                RangePlans plans = index.plans();
                rows.row(
                                index.base().keyspace,
                                index.base().name,
                                index.tables().index())
                        .column("column_name", index.column().name.toString())
                        .column("ready", index.nodes().readyAsKnown())
                        .column("leaf_size", index.leafSize())
                        .column("leaves", d.leaves().size())
                        .column("entries", d.totalRows())
                        .column("directory_version", d.version())
                        .column("queries_by_index", plans.queries(RangePlanner.Strategy.INDEX))
                        .column("queries_by_scan", plans.queries(RangePlanner.Strategy.SCAN))
                        .column("queries_by_sai", plans.queries(RangePlanner.Strategy.SAI))
                        .column("queries_by_client_scan", plans.queries(RangePlanner.Strategy.CLIENT_SCAN))
                        .column("switches_to_stock", plans.switches())
                        .column("stale_entries_removed", plans.staleEntriesRemoved())
                        .column("deleted_entries_removed", plans.deletedEntriesRemoved())
                        .column("keys_read_by_key_list", plans.keysReadByKeyList())
                        .column("keys_read_by_partition", plans.keysReadByPartition())
                        .column("model_index", model(planner, RangePlanner.Strategy.INDEX))
                        .column("model_scan", model(planner, RangePlanner.Strategy.SCAN))
                        .column("model_sai", model(planner, RangePlanner.Strategy.SAI))
                        .column("model_client_scan", model(planner, RangePlanner.Strategy.CLIENT_SCAN));
            }
            return rows;
        }

        /** "25.0 ms + 0.1100 ms/row, 12 queries observed". */
        private static String model(RangePlanner planner, RangePlanner.Strategy s) {
            double[] c = planner.coefficients(s);
            return String.format(
                    Locale.ROOT, "%.1f ms + %.4f ms/row, %d queries observed", c[0], c[1], planner.observations(s));
        }
    }

    /** {@code range_plans}: the last range queries each ordered index answered on this node, newest first. */
    static final class Plans extends AbstractVirtualTable {
        Plans() {
            super(TableMetadata.builder(NeedleViews.KEYSPACE, "range_plans")
                    .comment("The last range queries this node coordinated on each Needle ordered index, newest first")
                    .kind(TableMetadata.Kind.VIRTUAL)
                    .partitioner(new LocalPartitioner(UTF8Type.instance))
                    .addPartitionKeyColumn("keyspace_name", UTF8Type.instance)
                    .addClusteringColumn("table_name", UTF8Type.instance)
                    .addClusteringColumn("index_name", UTF8Type.instance)
                    .addClusteringColumn("plan", Int32Type.instance)
                    .addRegularColumn("started_at", TimestampType.instance)
                    .addRegularColumn("strategy", UTF8Type.instance)
                    .addRegularColumn("chosen_by", UTF8Type.instance)
                    .addRegularColumn("estimated_rows", DoubleType.instance)
                    .addRegularColumn("rows", LongType.instance)
                    .addRegularColumn("latency_ms", DoubleType.instance)
                    .addRegularColumn("more_pages", BooleanType.instance)
                    .build());
        }

        @Override
        public DataSet data() {
            SimpleDataSet rows = new SimpleDataSet(metadata());
            for (RangeIndex index : RangeIndexes.all()) {
                List<RangePlans.Plan> recent = index.plans().recent();
                for (int i = 0; i < recent.size(); i++) {
                    RangePlans.Plan p = recent.get(recent.size() - 1 - i);
                    rows.row(
                                    index.base().keyspace,
                                    index.base().name,
                                    index.tables().index(),
                                    i + 1)
                            .column("started_at", new Date(p.atMillis()))
                            .column("strategy", p.strategy().label())
                            .column("chosen_by", p.chosenByLabel())
                            .column("estimated_rows", Double.isNaN(p.estimate()) ? null : p.estimate())
                            .column("rows", p.rows())
                            .column("latency_ms", p.millis())
                            .column("more_pages", p.morePages());
                }
            }
            return rows;
        }
    }
}
