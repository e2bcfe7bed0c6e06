package dev.needle.bench;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import java.util.Map;

/**
 * One measured point of an experiment as {@code results.json} holds it (an element of "runs"):
 * where it was measured, each variant's result, stock's latency over Needle's, and the setting of
 * a lookup or an insert point.
 *
 * @param point               the point's label
 * @param x                   the point's position on its chart's axis
 * @param cache               "warm" or "cold"
 * @param warmupOpsPerVariant operations each variant ran before the measured rounds
 * @param variants            each variant's result, by name
 * @param ratios              stock's latency over Needle's (fields at the top level); null without stock
 * @param lookup              the setting of a lookup point (fields at the top level); null for inserts
 * @param insert              the setting of an insert point (fields at the top level); null for lookups
 */
@JsonInclude(JsonInclude.Include.NON_NULL)
public record PointResult(
        String point,
        double x,
        String cache,
        long warmupOpsPerVariant,
        Map<String, VariantResult> variants,
        @JsonUnwrapped StockRatios ratios,
        @JsonUnwrapped Lookup lookup,
        @JsonUnwrapped Insert insert) {

    /**
     * Stock's latency over Needle's, to three decimals, for the median, the p99 and the mean, for
     * each Needle variant measured; null where the variant is not measured (or took no time).
     */
    @JsonInclude(JsonInclude.Include.NON_NULL)
    public record StockRatios(
            Double ratioP50StockOverCuckoo,
            Double ratioP99StockOverCuckoo,
            Double ratioMeanStockOverCuckoo,
            Double ratioP50StockOverBloom,
            Double ratioP99StockOverBloom,
            Double ratioMeanStockOverBloom) {

        /** The ratios of {@code byVariant}'s Needle variants to its "stock"; null without stock. */
        static StockRatios of(Map<String, VariantResult> byVariant) {
            VariantResult stock = byVariant.get("stock");
            if (stock == null) {
                return null;
            }
            LatencyStats s = stock.latency();
            LatencyStats c = latency(byVariant.get("needle-cuckoo"));
            LatencyStats b = latency(byVariant.get("needle-bloom"));
            return new StockRatios(
                    ratio(s.p50Us(), c == null ? null : c.p50Us()),
                    ratio(s.p99Us(), c == null ? null : c.p99Us()),
                    ratio(s.meanUs(), c == null ? null : c.meanUs()),
                    ratio(s.p50Us(), b == null ? null : b.p50Us()),
                    ratio(s.p99Us(), b == null ? null : b.p99Us()),
                    ratio(s.meanUs(), b == null ? null : b.meanUs()));
        }

        private static LatencyStats latency(VariantResult v) {
            return v == null ? null : v.latency();
        }

        private static Double ratio(double stock, Double needle) {
            return needle == null || needle <= 0 ? null : Math.round(stock / needle * 1000) / 1000.0;
        }
    }

    /**
     * The setting of a lookup point.
     *
     * @param partitions   partitions written so far
     * @param tableBytes   bytes on disk per variant
     * @param deleteMode   "partition" or "row", how the deleted keys were deleted; null for none
     * @param mix          the share of lookups drawn from each pool of keys
     * @param remote       the share of lookups drawn from keys node 1 holds no replica of; null if not split
     * @param requestFloor the request floor measured after the point, on more than one node
     */
    public record Lookup(
            int partitions,
            Map<String, TableBytes> tableBytes,
            @JsonInclude(JsonInclude.Include.ALWAYS) String deleteMode,
            Map<String, Double> mix,
            @JsonInclude(JsonInclude.Include.ALWAYS) Double remote,
            @JsonInclude(JsonInclude.Include.NON_NULL) RequestFloor requestFloor) {}

    /**
     * The setting of an insert point.
     *
     * @param partitionsBeforeWarmup partitions written before the point's warm-up
     * @param load                   the share of the data set written before the point
     * @param rate                   the inserts per second the point offers; null: as fast as they go
     */
    public record Insert(
            long partitionsBeforeWarmup,
            double load,
            @JsonInclude(JsonInclude.Include.ALWAYS) Double rate) {}

    /**
     * One variant's table on disk, summed over the nodes.
     *
     * @param data     bytes of its SSTables
     * @param needle   bytes of Needle's saved filters (an SSTable component)
     * @param sstables live SSTables
     */
    public record TableBytes(long data, long needle, long sstables) {}
}
