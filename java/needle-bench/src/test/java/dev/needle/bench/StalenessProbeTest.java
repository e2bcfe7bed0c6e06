package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Map;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class StalenessProbeTest {
    @Test
    void timesFallInTheBinWhoseLowerBoundTheyReach() {
        assertEquals(0, KeyProbe.bin(0));
        assertEquals(0, KeyProbe.bin(499_999));
        assertEquals(1, KeyProbe.bin(500_000));
        assertEquals(3, KeyProbe.bin(2_000_000));
        assertEquals(3, KeyProbe.bin(2_999_999));
        int last = KeyProbe.BINS_MS.length - 1;
        assertEquals(last, KeyProbe.bin(5_000_000_000L));
        assertEquals(last, KeyProbe.bin(Long.MAX_VALUE));
    }

    @Test
    void percentilesAreInMillisecondsOfTheSortedValues() {
        long[] nanos = new long[1000];
        for (int i = 0; i < nanos.length; i++) {
            nanos[i] = (nanos.length - i) * 1_000_000L; // 1000 ms down to 1 ms
        }
        Map<String, Object> p = KeyProbe.percentiles(nanos);
        assertEquals(501.0, p.get("p50"));
        assertEquals(991.0, p.get("p99"));
        assertEquals(1000.0, p.get("p99.9"));
        assertEquals(1000.0, p.get("max"));
        assertEquals(1000_000_000L, nanos[0], "the input is left as it was");
        assertTrue(KeyProbe.percentiles(new long[0]).isEmpty());
    }

    @Test
    void optionsHaveDefaultsAndBadValuesAreNamed() {
        StalenessOptions o = StalenessOptions.parse(new String[] {"staleness"});
        assertEquals(4, o.nodes());
        assertEquals("lan", o.latency());
        assertEquals("1s", o.staleness());
        o = StalenessOptions.parse(
                new String[] {"staleness", "--nodes", "3", "--latency", "az", "--keys", "10", "--staleness", "200ms"});
        assertEquals(3, o.nodes());
        assertEquals(10, o.keys());
        assertEquals("az", o.latency());
        assertTrue(message("--nodes", "1").contains("at least 2"));
        assertTrue(message("--keys", "0").contains("must be positive"));
        assertTrue(message("--keys", "many").contains("not a number"));
        assertTrue(message("--staleness", "soon").contains("not like 500ms"));
        assertTrue(message("--latency", "moon").contains("moon"));
        assertTrue(message("--what", "1").contains("unknown option --what"));
        assertTrue(message("--keys").contains("--keys needs a value"));
    }

    @Test
    void aLoadWithoutSizeRunsUntilStopped() {
        AtomicLong done = new AtomicLong();
        AtomicLong seen = new AtomicLong();
        ClosedLoop.Outcome out = ClosedLoop.runUntil(
                2,
                () -> seen.get() >= 1000,
                1,
                (i, r) -> {
                    seen.incrementAndGet();
                    return true;
                },
                done);
        assertTrue(out.histogram().getTotalCount() >= 1000, "ran until the stop condition held");
        assertTrue(out.histogram().getTotalCount() <= 1002, "each thread stops before its next operation");
        assertEquals(out.histogram().getTotalCount(), done.get());
    }

    private static String message(String... args) {
        String[] all = new String[args.length + 1];
        all[0] = "staleness";
        System.arraycopy(args, 0, all, 1, args.length);
        return assertThrows(IllegalArgumentException.class, () -> StalenessOptions.parse(all))
                .getMessage();
    }
}
