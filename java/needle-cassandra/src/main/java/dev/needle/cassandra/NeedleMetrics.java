package dev.needle.cassandra;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Gauge;
import java.util.ArrayList;
import java.util.List;
import org.apache.cassandra.metrics.CassandraMetricsRegistry;
import org.apache.cassandra.metrics.CassandraMetricsRegistry.MetricName;

/**
 * Needle's metrics for one indexed table, in Cassandra's metrics registry and so over JMX as
 * {@code org.apache.cassandra.metrics:type=Needle,keyspace=KS,scope=TABLE,name=NAME}.
 */
final class NeedleMetrics {
    private static final String GROUP = "org.apache.cassandra.metrics";
    private static final String TYPE = "Needle";

    /** Reads answered empty without touching SSTables. */
    final Counter lookupsSkipped;
    /** Reads passed to Cassandra (the filters said LIVE, or the read was not eligible). */
    final Counter lookupsPassed;
    /** Reads the filters called LIVE that returned no rows: false positives, deletions not yet known, or data elsewhere. */
    final Counter emptyAfterLive;
    /** Keys proven to hold no live data by a feedback read and then skipped. */
    final Counter feedbackRemovals;
    final Counter sstablesScanned;
    final Counter sstablesLoaded;

    private final List<MetricName> names = new ArrayList<>();
    private final String keyspace;
    private final String table;

    NeedleMetrics(String keyspace, String table, String index, TableKeyState state) {
        this.keyspace = keyspace;
        this.table = table;
        lookupsSkipped = counter("LookupsSkipped");
        lookupsPassed = counter("LookupsPassed");
        emptyAfterLive = counter("EmptyReadsAfterLive");
        feedbackRemovals = counter("FeedbackRemovals");
        sstablesScanned = counter("SSTablesScanned");
        sstablesLoaded = counter("SSTablesLoaded");
        gauge("FilterBytes", state::filterBytes);
        gauge("LiveKeys", state::liveEntries);
        gauge("DeletedKeys", state::deletedEntries);
        gauge("MemtableKeys", state::memtableKeys);
        gauge("PartitionTombstones", () -> (long) state.tombstonesTracked());
        gauge("ProvenDeadKeys", () -> (long) state.provenDeadKeys());
        gauge("SSTablesWithFilter", () -> (long) state.sstableCount());
        gauge("Ready", () -> state.isReady() ? 1L : 0L);
    }

    private MetricName name(String metric) {
        String mbean = GROUP + ":type=" + TYPE + ",keyspace=" + keyspace + ",scope=" + table + ",name=" + metric;
        return new MetricName(GROUP, TYPE, metric, keyspace + "." + table, mbean);
    }

    private Counter counter(String metric) {
        MetricName n = name(metric);
        CassandraMetricsRegistry.Metrics.remove(n);
        names.add(n);
        return CassandraMetricsRegistry.Metrics.register(n, new Counter());
    }

    private void gauge(String metric, java.util.function.Supplier<Long> value) {
        MetricName n = name(metric);
        CassandraMetricsRegistry.Metrics.remove(n);
        names.add(n);
        CassandraMetricsRegistry.Metrics.register(n, (Gauge<Long>) value::get);
    }

    void release() {
        for (MetricName n : names) {
            CassandraMetricsRegistry.Metrics.remove(n);
        }
    }
}
