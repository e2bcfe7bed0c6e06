package dev.needle.testhooks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class LatencyProfileTest {
    @Test
    void profiles() {
        assertEquals(0, LatencyProfile.parse("raw").oneWayNanos(1, 2));
        assertEquals(200_000, LatencyProfile.parse("lan").oneWayNanos(1, 2));
        assertEquals(20_000_000, LatencyProfile.parse("WAN").oneWayNanos(3, 1));
        assertEquals(300_000, LatencyProfile.parse("fixed:0.3").oneWayNanos(1, 2));
        assertEquals(0, LatencyProfile.parse("lan").oneWayNanos(2, 2));
        LatencyProfile az = LatencyProfile.parse("az");
        assertEquals(100_000, az.oneWayNanos(1, 4)); // both in zone a
        assertEquals(250_000, az.oneWayNanos(1, 2));
        assertEquals(500_000, az.oneWayNanos(3, 1));
        assertEquals(750_000, az.oneWayNanos(2, 6));
        for (int a = 1; a <= 6; a++) {
            for (int b = 1; b <= 6; b++) {
                assertEquals(az.oneWayNanos(a, b), az.oneWayNanos(b, a), "symmetric");
            }
        }
        IllegalArgumentException e =
                assertThrows(IllegalArgumentException.class, () -> LatencyProfile.parse("satellite"));
        assertTrue(e.getMessage().contains("raw, lan, az, wan"), e.getMessage());
        assertThrows(IllegalArgumentException.class, () -> LatencyProfile.parse("fixed:-1"));
    }

    /** The delay line never runs an action early. */
    @Test
    void neverEarlyAndInOrder() throws Exception {
        Lateness lateness = new Lateness("test");
        DelayLine line = new DelayLine("test-delay-line", lateness);
        int n = 2000;
        CountDownLatch done = new CountDownLatch(n);
        AtomicLong early = new AtomicLong();
        for (int i = 0; i < n; i++) {
            long due = System.nanoTime() + 50_000 + (i % 7) * 30_000;
            line.at(due, () -> {
                if (System.nanoTime() < due) {
                    early.incrementAndGet();
                }
                done.countDown();
            });
        }
        assertTrue(done.await(30, TimeUnit.SECONDS));
        assertEquals(0, early.get(), "actions ran before their time");
        assertEquals(n, lateness.getMessagesDelayed());
        assertTrue(lateness.getLatenessP50Micros() >= 0);
    }

    @Test
    void latenessQuantiles() {
        Lateness l = new Lateness("test");
        assertEquals(-1, l.getLatenessP50Micros());
        for (int us = 0; us < 100; us++) {
            l.record(us * 1000L + 999);
        }
        l.record(Long.MAX_VALUE / 2); // beyond the last bucket
        assertEquals(101, l.getMessagesDelayed());
        assertEquals(50, l.getLatenessP50Micros());
        assertEquals(99, l.getLatenessP99Micros());
        assertEquals(Lateness.MAX_MICROS, l.getLatenessMaxMicros());
        l.reset();
        assertEquals(0, l.getMessagesDelayed());
    }
}
