package dev.needle.cassandra.range;

import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Future;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.function.Supplier;

/**
 * The threads on which a coordinator's range queries read in parallel (the splits of a {@link
 * ParallelScan}, the next batch of an index answer's rows), shared by every query of the node,
 * and the way their failures reach the client.
 */
final class RangeThreads {
    /** Threads shared by every query: as many as one scan reads splits at once. */
    static final int THREADS = 8;

    private static final AtomicInteger NAMED = new AtomicInteger();

    static final ExecutorService POOL =
            new ThreadPoolExecutor(THREADS, THREADS, 60, TimeUnit.SECONDS, new LinkedBlockingQueue<>(), r -> {
                Thread t = new Thread(r, "needle-range-" + NAMED.incrementAndGet());
                t.setDaemon(true);
                return t;
            });

    static {
        ((ThreadPoolExecutor) POOL).allowCoreThreadTimeOut(true);
    }

    private RangeThreads() {}

    /**
     * The result of a read run on {@link #POOL}. Its timeouts and unavailable replicas reach the
     * client as they would from Cassandra's own read: the read's own exception is thrown.
     */
    static <T> T await(Future<T> f) {
        try {
            return f.get();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while reading", e);
        } catch (ExecutionException e) {
            if (e.getCause() instanceof RuntimeException re) {
                throw re;
            }
            throw new IllegalStateException(e.getCause());
        }
    }

    /** Starts {@code work} on {@link #POOL}, for a thread that will need its result later. */
    static <T> Ahead<T> ahead(Supplier<T> work) {
        return new Ahead<>(work);
    }

    /**
     * Work started on the pool ahead of need. Whoever reaches it first runs it: a pool thread, or
     * the thread that needs it, which so never waits for it behind other queries' reads.
     */
    static final class Ahead<T> {
        private final AtomicBoolean claimed = new AtomicBoolean();
        private final Supplier<T> work;
        private final Future<T> future;

        private Ahead(Supplier<T> work) {
            this.work = work;
            this.future = POOL.submit(() -> claimed.compareAndSet(false, true) ? work.get() : null);
        }

        /** Its result: run here if no pool thread has started it, else awaited. */
        T get() {
            return claimed.compareAndSet(false, true) ? work.get() : await(future);
        }

        /** It is not needed: not started if it has not been (a read under way finishes, its result dropped). */
        void drop() {
            claimed.set(true);
            future.cancel(false);
        }
    }
}
