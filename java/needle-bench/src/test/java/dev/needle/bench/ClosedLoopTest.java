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
}
