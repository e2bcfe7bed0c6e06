package dev.needle.cassandra;

import static org.junit.jupiter.api.Assertions.assertEquals;

import dev.needle.cassandra.PointRead.Outcome;
import dev.needle.cassandra.storage.FilterStats;
import dev.needle.cassandra.storage.NeedleMetrics;
import java.util.Map;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Each outcome of a point read counts once, as a skip or a pass, and under the node filters' reason. */
class PointReadOutcomeTest {
    @Test
    void everyOutcomeCountsWhereTheOperatorLooks() {
        Map<String, Function<NeedleMetrics, Long>> counters = Map.of(
                "skipped", m -> m.lookupsSkipped.getCount(),
                "passed", m -> m.lookupsPassed.getCount(),
                "nodeSkipsOne", m -> m.nodeSkipsOne.getCount(),
                "nodeSkipsQuorum", m -> m.nodeSkipsQuorum.getCount(),
                "nodePassedLive", m -> m.nodePassedLive.getCount(),
                "nodePassedStale", m -> m.nodePassedStale.getCount(),
                "nodePassedNotReady", m -> m.nodePassedNotReady.getCount(),
                "nodePassedNotEligible", m -> m.nodePassedNotEligible.getCount());
        Map<Outcome, Map<String, Long>> expected = Map.of(
                Outcome.NOT_DECIDED, Map.of(),
                Outcome.PASSED, Map.of("passed", 1L),
                Outcome.PASSED_LIVE_HERE, Map.of("passed", 1L),
                Outcome.SKIPPED_HERE, Map.of("skipped", 1L),
                Outcome.SKIPPED_BY_COPIES_AT_ONE, Map.of("skipped", 1L, "nodeSkipsOne", 1L),
                Outcome.SKIPPED_BY_COPIES_AT_QUORUM, Map.of("skipped", 1L, "nodeSkipsQuorum", 1L),
                Outcome.PASSED_LIVE_ELSEWHERE, Map.of("passed", 1L, "nodePassedLive", 1L),
                Outcome.PASSED_STALE_COPY, Map.of("passed", 1L, "nodePassedStale", 1L),
                Outcome.PASSED_COPY_NOT_READY, Map.of("passed", 1L, "nodePassedNotReady", 1L),
                Outcome.PASSED_NOT_ELIGIBLE, Map.of("passed", 1L, "nodePassedNotEligible", 1L));
        assertEquals(Outcome.values().length, expected.size(), "every outcome has its expected counts");
        for (Outcome o : Outcome.values()) {
            NeedleMetrics m = new NeedleMetrics(
                    "ks", "t_" + o.name().toLowerCase(), "i", () -> new FilterStats(true, 0, 0, 0, 0, 0, 0, 0, 0, 0));
            try {
                o.count(m);
                for (Map.Entry<String, Function<NeedleMetrics, Long>> c : counters.entrySet()) {
                    assertEquals(
                            expected.get(o).getOrDefault(c.getKey(), 0L),
                            c.getValue().apply(m),
                            o + ": " + c.getKey());
                }
                assertEquals(expected.get(o).containsKey("skipped"), o.skip(), o + ": skip");
            } finally {
                m.release();
            }
        }
    }
}
