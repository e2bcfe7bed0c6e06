package dev.needle.cassandra.base;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import org.apache.cassandra.exceptions.ConfigurationException;
import org.junit.jupiter.api.Test;

/** The index options: defaults, accepted values, and the message a wrong value gets at CREATE INDEX. */
class NeedleOptionsTest {
    @Test
    void defaults() {
        NeedleOptions o = NeedleOptions.parse(Map.of());
        assertEquals(NeedleOptions.FilterType.CUCKOO, o.filter);
        assertEquals(0.001, o.fpRate);
        assertEquals(NeedleOptions.NodeFilterMode.OFF, o.nodeFilter);
        assertEquals(NeedleOptions.CopyScope.REPLICAS, o.copyScope);
        assertEquals(1000, o.stalenessMillis);
    }

    @Test
    void nodeFilterAndStaleness() {
        NeedleOptions o = NeedleOptions.parse(Map.of("node_filter", "QUORUM", "staleness", "250ms"));
        assertEquals(NeedleOptions.NodeFilterMode.QUORUM, o.nodeFilter);
        assertEquals(250, o.stalenessMillis);
        assertEquals(1500, NeedleOptions.parse(Map.of("staleness", "1.5s")).stalenessMillis);
        assertEquals(NeedleOptions.NodeFilterMode.ONE, NeedleOptions.parse(Map.of("node_filter", " one ")).nodeFilter);
        assertEquals(NeedleOptions.CopyScope.ALL, NeedleOptions.parse(Map.of("node_filter_copies", "All")).copyScope);
        assertTrue(NeedleOptions.unknown(
                        Map.of("node_filter", "one", "node_filter_copies", "all", "staleness", "1s", "target", "x"))
                .isEmpty());
    }

    @Test
    void wrongValuesSayWhatToWrite() {
        assertMessage(Map.of("node_filter", "all"), "'off', 'one'");
        assertMessage(Map.of("staleness", "soon"), "such as '1s'");
        assertMessage(Map.of("staleness", "5ms"), "between 10ms and 60s");
        assertMessage(Map.of("staleness", "2m"), "such as '1s'");
        assertMessage(Map.of("staleness", "61s"), "between 10ms and 60s");
        assertMessage(Map.of("filter", "xor"), "'cuckoo'");
        assertMessage(Map.of("node_filter_copies", "some"), "'replicas'");
    }

    private static void assertMessage(Map<String, String> options, String expected) {
        ConfigurationException e = assertThrows(ConfigurationException.class, () -> NeedleOptions.parse(options));
        assertTrue(e.getMessage().contains(expected), e.getMessage());
    }
}
