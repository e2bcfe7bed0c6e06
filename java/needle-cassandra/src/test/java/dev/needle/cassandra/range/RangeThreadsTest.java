package dev.needle.cassandra.range;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertSame;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

/** Work read ahead on the range queries' pool runs exactly once, where it is first reached. */
class RangeThreadsTest {
    /** Occupies every pool thread until the returned latch is counted down. */
    private static CountDownLatch occupyThePool() throws InterruptedException {
        CountDownLatch release = new CountDownLatch(1);
        CountDownLatch started = new CountDownLatch(RangeThreads.THREADS);
        for (int i = 0; i < RangeThreads.THREADS; i++) {
            RangeThreads.POOL.submit(() -> {
                started.countDown();
                release.await();
                return null;
            });
        }
        assertTrue(started.await(10, TimeUnit.SECONDS));
        return release;
    }

    @Test
    void workThePoolHasNotStartedRunsOnTheThreadThatNeedsIt() throws Exception {
        CountDownLatch release = occupyThePool();
        try {
            AtomicInteger runs = new AtomicInteger();
            Set<Thread> ranOn = ConcurrentHashMap.newKeySet();
            RangeThreads.Ahead<String> ahead = RangeThreads.ahead(() -> {
                runs.incrementAndGet();
                ranOn.add(Thread.currentThread());
                return "rows";
            });
            assertEquals("rows", ahead.get());
            assertEquals(Set.of(Thread.currentThread()), ranOn);
            release.countDown();
            // The pool's turn comes later and finds the work done: it does not run it again.
            Future<?> after = RangeThreads.POOL.submit(() -> {});
            after.get(10, TimeUnit.SECONDS);
            assertEquals(1, runs.get());
        } finally {
            release.countDown();
        }
    }

    @Test
    void workThePoolStartedIsAwaitedAndItsFailureIsTheReadsOwn() throws Exception {
        CountDownLatch running = new CountDownLatch(1);
        CountDownLatch finish = new CountDownLatch(1);
        AtomicInteger runs = new AtomicInteger();
        RangeThreads.Ahead<Integer> ahead = RangeThreads.ahead(() -> {
            runs.incrementAndGet();
            running.countDown();
            try {
                finish.await();
            } catch (InterruptedException e) {
                throw new IllegalStateException(e);
            }
            return 42;
        });
        assertTrue(running.await(10, TimeUnit.SECONDS));
        finish.countDown();
        assertEquals(42, ahead.get());
        assertEquals(1, runs.get());

        IllegalArgumentException timeout = new IllegalArgumentException("a read timed out");
        CountDownLatch failing = new CountDownLatch(1);
        RangeThreads.Ahead<Integer> failed = RangeThreads.ahead(() -> {
            failing.countDown();
            throw timeout;
        });
        assertTrue(failing.await(10, TimeUnit.SECONDS));
        assertSame(timeout, assertThrows(IllegalArgumentException.class, failed::get));
    }

    @Test
    void droppedWorkThatHasNotStartedNeverRuns() throws Exception {
        CountDownLatch release = occupyThePool();
        AtomicInteger runs = new AtomicInteger();
        List<RangeThreads.Ahead<Integer>> dropped = new ArrayList<>();
        try {
            for (int i = 0; i < 20; i++) {
                dropped.add(RangeThreads.ahead(runs::incrementAndGet));
            }
            dropped.forEach(RangeThreads.Ahead::drop);
        } finally {
            release.countDown();
        }
        RangeThreads.POOL.submit(() -> {}).get(10, TimeUnit.SECONDS);
        Thread.sleep(50); // any queued work would have been taken by now
        assertEquals(0, runs.get());
        assertFalse(dropped.isEmpty());
    }
}
