package dev.needle.bench;

import com.fasterxml.jackson.annotation.JsonInclude;
import java.nio.ByteBuffer;
import java.util.Arrays;
import java.util.Base64;
import org.HdrHistogram.Histogram;

/**
 * The latency of one variant at one point of an experiment, in microseconds, its throughput, and
 * the histogram itself (HdrHistogram's compressed encoding, base64), from which any other
 * percentile can be read later.
 *
 * @param throughputOpsS operations per second over the measured time; null if no time was measured
 * @param hdrHistogramNs the latencies in nanoseconds; null where a result leaves it out
 */
public record LatencyStats(
        long count,
        double meanUs,
        double minUs,
        double p50Us,
        double p95Us,
        double p99Us,
        double maxUs,
        Double throughputOpsS,
        @JsonInclude(JsonInclude.Include.NON_NULL) String hdrHistogramNs) {

    /** The statistics of {@code h}, whose operations took {@code nanos} of wall time in all. */
    static LatencyStats of(Histogram h, long nanos) {
        ByteBuffer buf = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
        int len = h.encodeIntoCompressedByteBuffer(buf);
        return new LatencyStats(
                h.getTotalCount(),
                us(h.getMean()),
                us(h.getMinValue()),
                us(h.getValueAtPercentile(50)),
                us(h.getValueAtPercentile(95)),
                us(h.getValueAtPercentile(99)),
                us(h.getMaxValue()),
                nanos > 0 ? Math.round(h.getTotalCount() / (nanos / 1e9) * 10) / 10.0 : null,
                Base64.getEncoder().encodeToString(Arrays.copyOf(buf.array(), len)));
    }

    /** The same statistics without the histogram. */
    LatencyStats withoutHistogram() {
        return new LatencyStats(count, meanUs, minUs, p50Us, p95Us, p99Us, maxUs, throughputOpsS, null);
    }

    /** Nanoseconds in microseconds, to a tenth. */
    private static double us(double nanos) {
        return Math.round(nanos / 100.0) / 10.0;
    }
}
