package dev.needle.bench;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;

class ClosedLoopTest {

    @Test
    void everyOperationRunsOnceAndWrongResultsAreCounted() {
        ConcurrentLinkedQueue<Long> seen = new ConcurrentLinkedQueue<>();
        AtomicLong progress = new AtomicLong();
        ClosedLoop.Outcome o = ClosedLoop.run(3, 100, 7, (i, r) -> seen.add(i) && i % 10 != 0, progress);
        assertEquals(100, seen.size());
        assertEquals(100, seen.stream().distinct().count());
        assertEquals(10, o.wrong());
        assertEquals(100, o.histogram().getTotalCount());
        assertEquals(100, progress.get());
    }

    /** Operation i of a paced run never starts before i / rate seconds into the run. */
    @Test
    void aPacedRunStartsNoOperationBeforeItsTime() {
        long[] started = new long[60];
        long t0 = System.nanoTime();
        ClosedLoop.run(
                4,
                started.length,
                1,
                (i, r) -> {
                    started[(int) i] = System.nanoTime();
                    return true;
                },
                new AtomicLong(),
                400.0);
        for (int i = 0; i < started.length; i++) {
            long earliest = t0 + (long) (i * 1e9 / 400);
            assertTrue(started[i] >= earliest, "operation " + i + " started " + (earliest - started[i]) + " ns early");
        }
        assertThrows(
                IllegalArgumentException.class, () -> ClosedLoop.run(1, 1, 1, (i, r) -> true, new AtomicLong(), 0.0));
    }

    /**
     * Paced, the operations stuck behind a slow one count their wait: one thread at 100 a second,
     * operation 0 takes 300 ms, so operation i (due at 10 i ms) ends near 300 ms and reads about
     * 300 - 10 i ms; timed from their own starts, operations 1 to 39 would all read about 0 ms.
     */
    @Test
    void aPacedRunCountsLatencyFromWhenEachOperationWasDue() {
        ClosedLoop.Outcome o = ClosedLoop.run(
                1,
                40,
                1,
                (i, r) -> {
                    if (i == 0) {
                        java.util.concurrent.locks.LockSupport.parkNanos(300_000_000L);
                    }
                    return true;
                },
                new AtomicLong(),
                100.0);
        long over50ms = o.histogram().getCountBetweenValues(50_000_000L, ClosedLoop.MAX_NANOS);
        assertTrue(over50ms >= 20, "operations 0 to 24 waited over 50 ms for the slow one: " + over50ms + " of 40");
        assertTrue(o.histogram().getMaxValue() >= 300_000_000L, "the slow one itself counts in full");
    }
}
