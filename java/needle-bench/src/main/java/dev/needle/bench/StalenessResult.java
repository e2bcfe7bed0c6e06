package dev.needle.bench;

import com.fasterxml.jackson.annotation.JsonAnyGetter;
import com.fasterxml.jackson.annotation.JsonIgnore;
import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonProperty;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import java.util.Arrays;
import java.util.List;
import java.util.Map;

/**
 * The document the staleness probe ({@link StalenessProbe}) writes to {@code staleness.json}:
 * the setting, each phase's probe of both tables, the reads that missed a key later than the
 * bound, the sync's cost and node 1's view of the node filters at the end. The file is written
 * after each phase, so what is not measured yet is left out.
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
record StalenessResult(
        String experiment,
        Map<String, Object> machine,
        int nodes,
        String latency,
        String stalenessBound,
        String method,
        Map<String, Phase> probe,
        List<Violation> violations,
        Map<String, Map<String, SyncCost.Insertion>> syncCost,
        List<NodeFilterRow> nodeFilters) {

    StalenessResult withSyncCost(Map<String, Map<String, SyncCost.Insertion>> cost, List<NodeFilterRow> views) {
        return new StalenessResult(
                experiment, machine, nodes, latency, stalenessBound, method, probe, violations, cost, views);
    }

    /**
     * One phase (at idle, under load): each table's probe by its variant's name, how long
     * Cassandra's mutation messages and the owners' changes waited, per node, and the load.
     */
    record Phase(
            @JsonIgnore Map<String, KeyProbe.Result> tables,
            Map<String, Percentiles> cassandraMutationDeliveryMs,
            Map<String, ChangeWait> needleSyncWaitMs,
            @JsonInclude(JsonInclude.Include.NON_NULL) Load load) {

        /** The tables' probes, each under its variant's name beside the phase's other entries. */
        @JsonAnyGetter
        Map<String, KeyProbe.Result> byTable() {
            return tables;
        }
    }

    /** p50, p99, p99.9 and max in milliseconds; all absent when there was no value. */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    record Percentiles(
            Double p50, Double p99, @JsonProperty("p99.9") Double p999, Double max) {
        static final Percentiles NONE = new Percentiles(null, null, null, null);

        /** Of nanosecond values. */
        static Percentiles ofNanos(long[] nanos) {
            if (nanos.length == 0) {
                return NONE;
            }
            long[] v = nanos.clone();
            Arrays.sort(v);
            return new Percentiles(
                    round(LatencyCalibration.q(v, 0.5)),
                    round(LatencyCalibration.q(v, 0.99)),
                    round(LatencyCalibration.q(v, 0.999)),
                    round(v[v.length - 1] / 1e6));
        }

        /**
         * Of the counts of a Cassandra histogram's buckets ({@code RecentValues} over JMX: what it
         * recorded since the last read, without decay) of microseconds; {@code zeros}: whether it
         * counts zeros in a bucket of their own. A percentile is the upper end of its bucket, as
         * Cassandra reports it (buckets about 20 % wide).
         */
        static Percentiles ofBucketsMicros(long[] counts, boolean zeros) {
            long[] ends = bucketEnds(counts.length, zeros);
            long total = Arrays.stream(counts).sum();
            if (total == 0) {
                return NONE;
            }
            if (counts[counts.length - 1] > 0) {
                throw new IllegalStateException(
                        "a value beyond the histogram's last bucket: " + Arrays.toString(counts));
            }
            int last = 0;
            for (int i = 0; i < ends.length; i++) {
                if (counts[i] > 0) {
                    last = i;
                }
            }
            return new Percentiles(
                    round(quantile(counts, ends, total, 0.5) / 1000.0),
                    round(quantile(counts, ends, total, 0.99) / 1000.0),
                    round(quantile(counts, ends, total, 0.999) / 1000.0),
                    round(ends[last] / 1000.0));
        }

        private static long quantile(long[] counts, long[] ends, long total, double q) {
            long rank = (long) Math.ceil(total * q);
            long seen = 0;
            for (int i = 0; i < ends.length; i++) {
                seen += counts[i];
                if (seen >= rank) {
                    return ends[i];
                }
            }
            return ends[ends.length - 1];
        }

        /**
         * The upper ends of the buckets of Cassandra's {@code DecayingEstimatedHistogramReservoir}
         * whose {@code length} counts are read: from 1, each about 1.2 times the one before (after
         * a bucket of 0 when it counts zeros), 164 of them (127 for a timer's), and an overflow
         * bucket last, which has no end.
         */
        static long[] bucketEnds(int length, boolean zeros) {
            int buckets = length - 1;
            int fromOne = buckets - (zeros ? 1 : 0);
            if (fromOne != 164 && fromOne != 127) {
                throw new IllegalStateException(length + " bucket counts" + (zeros ? " with zeros" : "")
                        + ": not a histogram of Cassandra 5.0 (127 or 164 buckets from 1 and an overflow bucket)");
            }
            long[] ends = new long[buckets];
            int i = 0;
            if (zeros) {
                ends[i++] = 0;
            }
            long end = 1;
            ends[i++] = end;
            for (; i < buckets; i++) {
                long next = Math.round(end * 1.2);
                end = next == end ? end + 1 : next;
                ends[i] = end;
            }
            return ends;
        }
    }

    /** How long one node's changes waited for their batch: how many, and the percentiles. */
    record ChangeWait(long changes, @JsonUnwrapped Percentiles waited) {}

    /** The load of a phase under load: its threads, inserts and their latency. */
    record Load(int threads, long inserts, long insertsPerS, double insertP50Ms, double insertP99Ms) {}

    /** A read that began more than the bound after the write and missed the key. */
    record Violation(String table, long key, int owner, int coordinator, double msSinceWrite) {}

    /** A row of {@code needle_views.node_filters}. */
    record NodeFilterRow(String owner, String role, long epoch, long seq, long keys, long bytes, boolean trusted) {}

    private static double round(double x) {
        return LatencyCalibration.round(x);
    }
}
