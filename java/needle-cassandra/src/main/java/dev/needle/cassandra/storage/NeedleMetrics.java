package dev.needle.cassandra.storage;

import com.codahale.metrics.Counter;
import com.codahale.metrics.Histogram;
import dev.needle.cassandra.base.MetricGroup;
import java.util.function.LongSupplier;
import java.util.function.Supplier;
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
    private final OneReading stats;

    /**
     * @param stats the table's storage-filter numbers (each call reads every SSTable's filter: the
     *     gauges share one reading for 100 ms, so that a scrape, which reads them all at once, reads
     *     them once and sees one moment)
     */
    public NeedleMetrics(String keyspace, String table, String index, Supplier<FilterStats> stats) {
        this.metrics = new MetricGroup(TYPE, keyspace, table);
        this.stats = new OneReading(stats);
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
        gauge("Ready", s -> s.ready() ? 1 : 0);
        gauge("FilterBytes", FilterStats::filterBytes);
        gauge("LiveKeys", FilterStats::liveKeys);
        gauge("DeletedKeys", FilterStats::deletedKeys);
        gauge("MemtableKeys", FilterStats::memtableKeys);
        gauge("PartitionTombstones", FilterStats::partitionTombstones);
        gauge("ProvenDeadKeys", FilterStats::provenDeadKeys);
        gauge("SSTablesWithFilter", FilterStats::sstablesWithFilter);
        gauge("SSTablesWithoutFilter", FilterStats::sstablesWithoutFilter);
        gauge("UntrackedMemtables", FilterStats::untrackedMemtables);
    }

    private Counter counter(String metric) {
        return metrics.counter(metric);
    }

    private void gauge(String metric, ToLongFunction<FilterStats> value) {
        metrics.gauge(metric, () -> value.applyAsLong(stats.get()));
    }

    /** The last reading of the stats, taken again when it is 100 ms old. */
    private static final class OneReading {
        private static final long MAX_AGE_NANOS = 100_000_000L;
        private final Supplier<FilterStats> source;
        private volatile FilterStats last;
        private volatile long takenAt;

        OneReading(Supplier<FilterStats> source) {
            this.source = source;
        }

        FilterStats get() {
            FilterStats s = last;
            long now = System.nanoTime();
            if (s == null || now - takenAt > MAX_AGE_NANOS) {
                s = source.get();
                last = s;
                takenAt = now;
            }
            return s;
        }
    }

    /** Registers a gauge of this table under {@code metric} (replacing one of that name), released with the others. */
    public void gauge(String metric, LongSupplier value) {
        metrics.gauge(metric, value);
    }

    /** Registers a histogram of this table under {@code metric} (replacing one of that name), released with the others. */
    public Histogram histogram(String metric) {
        return metrics.histogram(metric);
    }

    /** Removes this table's metrics (its index was dropped). */
    public void release() {
        metrics.release();
    }
}
