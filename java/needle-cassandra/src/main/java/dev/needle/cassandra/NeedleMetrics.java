package dev.needle.cassandra;

import com.codahale.metrics.Counter;
import dev.needle.cassandra.storage.StorageFilter;
import java.util.function.LongSupplier;
import java.util.function.ToLongFunction;

/**
 * Needle's metrics for one indexed table, in Cassandra's metrics registry and so over JMX as
 * {@code org.apache.cassandra.metrics:type=Needle,keyspace=KS,scope=TABLE,name=NAME}.
 */
public final class NeedleMetrics {
    private static final String TYPE = "Needle";

    /** Reads answered empty without touching SSTables. */
    public final Counter lookupsSkipped;
    /** Reads passed to Cassandra (the filters said LIVE, or the read was not eligible). */
    public final Counter lookupsPassed;
    /** Reads the filters called LIVE that returned no rows: false positives, deletions not yet known, or data elsewhere. */
    public final Counter emptyAfterLive;
    /** Keys proven to hold no live data by a feedback read and then skipped. */
    public final Counter feedbackRemovals;
    /** Feedback reads not made because too many were waiting (the key is checked again on a later empty read). */
    public final Counter feedbackChecksDropped;
    /** SSTables whose keys were read from their data. */
    public final Counter sstablesScanned;
    /** SSTables whose keys were loaded from the filter saved with them. */
    public final Counter sstablesLoaded;
    /** Filters saved as SSTable components. */
    public final Counter sstablesSaved;
    /** Errors Needle caught so as not to fail a write, flush, compaction or stream (see the node's log). */
    public final Counter failures;
    /** Reads at ONE or LOCAL_ONE answered empty from the node filters, without a round trip. */
    public final Counter nodeSkipsOne;
    /** Reads at QUORUM or LOCAL_QUORUM answered empty from the node filters. */
    public final Counter nodeSkipsQuorum;
    /** Reads passed because a replica's copy (or this node's filter) said the key may be live. */
    public final Counter nodePassedLive;
    /** Reads passed because a replica's copy was older than the staleness bound, or missing. */
    public final Counter nodePassedStale;
    /** Reads passed because a replica's filter was not ready, or its copy incomplete. */
    public final Counter nodePassedNotReady;
    /** Reads passed without asking the copies (a recent write through this node, a moving range, a client-set time). */
    public final Counter nodePassedNotEligible;

    private final MetricGroup metrics;

    public NeedleMetrics(String keyspace, String table, String index, StorageFilter filter) {
        this.metrics = new MetricGroup(TYPE, keyspace, table);
        lookupsSkipped = counter("LookupsSkipped");
        lookupsPassed = counter("LookupsPassed");
        emptyAfterLive = counter("EmptyReadsAfterLive");
        feedbackRemovals = counter("FeedbackRemovals");
        feedbackChecksDropped = counter("FeedbackChecksDropped");
        sstablesScanned = counter("SSTablesScanned");
        sstablesLoaded = counter("SSTablesLoaded");
        sstablesSaved = counter("SSTablesSaved");
        failures = counter("Failures");
        nodeSkipsOne = counter("NodeSkipsOne");
        nodeSkipsQuorum = counter("NodeSkipsQuorum");
        nodePassedLive = counter("NodePassedLive");
        nodePassedStale = counter("NodePassedStale");
        nodePassedNotReady = counter("NodePassedNotReady");
        nodePassedNotEligible = counter("NodePassedNotEligible");
        gauge("Ready", filter, s -> s.ready() ? 1 : 0);
        gauge("FilterBytes", filter, StorageFilter.Stats::filterBytes);
        gauge("LiveKeys", filter, StorageFilter.Stats::liveKeys);
        gauge("DeletedKeys", filter, StorageFilter.Stats::deletedKeys);
        gauge("MemtableKeys", filter, StorageFilter.Stats::memtableKeys);
        gauge("PartitionTombstones", filter, StorageFilter.Stats::partitionTombstones);
        gauge("ProvenDeadKeys", filter, StorageFilter.Stats::provenDeadKeys);
        gauge("SSTablesWithFilter", filter, StorageFilter.Stats::sstablesWithFilter);
        gauge("SSTablesWithoutFilter", filter, StorageFilter.Stats::sstablesWithoutFilter);
        gauge("UntrackedMemtables", filter, StorageFilter.Stats::untrackedMemtables);
    }

    private Counter counter(String metric) {
        return metrics.counter(metric);
    }

    private void gauge(String metric, StorageFilter filter, ToLongFunction<StorageFilter.Stats> value) {
        metrics.gauge(metric, () -> value.applyAsLong(filter.stats()));
    }

    /** Registers a gauge of this table under {@code metric} (replacing one of that name), released with the others. */
    public void gauge(String metric, LongSupplier value) {
        metrics.gauge(metric, value);
    }

    /** Removes this table's metrics (its index was dropped). */
    public void release() {
        metrics.release();
    }
}
