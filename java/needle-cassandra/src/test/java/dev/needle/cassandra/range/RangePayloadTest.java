package dev.needle.cassandra.range;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.needle.range.RangeQuery;
import org.junit.jupiter.api.Test;

/** The client library and the query handler name the custom payload's keys alike. */
class RangePayloadTest {
    @Test
    void clientAndHandlerUseTheSameKeys() {
        assertEquals(RangePayload.STRATEGY_PAYLOAD, RangeQuery.STRATEGY_PAYLOAD);
        assertEquals(RangePayload.PLAN_PAYLOAD, RangeQuery.PLAN_PAYLOAD);
        assertEquals(RangePayload.ESTIMATE_PAYLOAD, RangeQuery.ESTIMATE_PAYLOAD);
        assertEquals(RangePayload.CLIENT_SCAN_PAYLOAD, RangeQuery.CLIENT_SCAN_PAYLOAD);
        assertEquals("client-scan", RangePlanner.Strategy.CLIENT_SCAN.label());
    }
}
