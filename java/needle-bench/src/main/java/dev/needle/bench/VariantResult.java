package dev.needle.bench;

import com.fasterxml.jackson.annotation.JsonInclude;
import com.fasterxml.jackson.annotation.JsonUnwrapped;
import java.util.Map;

/**
 * One variant at one measured point: its latency, the operations whose result was wrong, and,
 * where they apply, what the nodes spent and what Needle's counters say.
 *
 * @param latency        the latency statistics (their fields at the top level of the result)
 * @param wrongResults   operations that returned another row count than the data set holds
 * @param resources      CPU, network and disk per operation, when the experiment samples them
 * @param needle         Needle's lookup counters (their fields at the top level); null for stock
 * @param nodeFilterSync what the node filters' owners sent, when the table has node filters
 */
public record VariantResult(
        @JsonUnwrapped LatencyStats latency,
        long wrongResults,
        @JsonInclude(JsonInclude.Include.NON_NULL) Map<String, Object> resources,

        @JsonUnwrapped @JsonInclude(JsonInclude.Include.NON_NULL)
        NeedleCounters.Lookups needle,

        @JsonInclude(JsonInclude.Include.NON_NULL) NeedleCounters.Sync nodeFilterSync) {}
