package dev.needle.bench;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;
import java.util.function.BooleanSupplier;
import org.HdrHistogram.Histogram;

/**
 * Closed-loop clients (the model of the published benchmarks): each of N threads issues its next
 * operation only when the previous one has returned, until {@code ops} operations are done. The
 * latency of every operation goes into an HdrHistogram (nanoseconds, 3 significant digits).
 */
final class ClosedLoop {
    /** Highest latency the histograms track: 10 minutes. */
    static final long MAX_NANOS = 600_000_000_000L;

    /** One operation; returns false when its result is wrong (e.g. rows returned for a deleted key). */
    @FunctionalInterface
    interface Op {
        boolean run(long index, SplittableRandom random);
    }

    /**
     * @param histogram latencies in nanoseconds
     * @param wrong     operations whose result was wrong
     * @param nanos     wall time of the whole run
     */
    record Outcome(Histogram histogram, long wrong, long nanos) {}

    private ClosedLoop() {}

    static Histogram newHistogram() {
        return new Histogram(MAX_NANOS, 3);
    }

    /**
     * Runs {@code ops} operations on {@code threads} threads. Thread t's random source is seeded with
     * {@code seed} and t, so a run with the same seed draws the same keys. The first exception stops
     * every thread and is rethrown: a benchmark with failed requests measures nothing.
     */
    static Outcome run(int threads, long ops, long seed, Op op, AtomicLong progress) {
        return run(threads, ops, () -> false, seed, op, progress, null);
    }

    /**
     * As {@link #run(int, long, long, Op, AtomicLong)}, paced: operation i starts no earlier than
     * i / {@code perSecond} seconds after the run began (all threads together; null: no pacing).
     * Below what the threads can do, the run takes ops / perSecond seconds and every variant does
     * the same work per second, so what the nodes spend compares directly. An operation's latency
     * counts from when it was due, not from when a thread got to it: an operation that waits behind
     * a slow one is as late as its client sees it (no coordinated omission).
     */
    static Outcome run(int threads, long ops, long seed, Op op, AtomicLong progress, Double perSecond) {
        return run(threads, ops, () -> false, seed, op, progress, perSecond);
    }

    /**
     * Runs operations on {@code threads} threads until {@code stop} says so (checked before each
     * operation): a background load of no fixed size.
     */
    static Outcome runUntil(int threads, BooleanSupplier stop, long seed, Op op, AtomicLong progress) {
        return run(threads, Long.MAX_VALUE, stop, seed, op, progress, null);
    }

    private static Outcome run(
            int threads, long ops, BooleanSupplier stop, long seed, Op op, AtomicLong progress, Double perSecond) {
        if (perSecond != null && !(perSecond > 0)) {
            throw new IllegalArgumentException("a paced run needs a rate > 0, got " + perSecond);
        }
        AtomicLong next = new AtomicLong();
        AtomicLong wrong = new AtomicLong();
        AtomicReference<Throwable> failure = new AtomicReference<>();
        List<Histogram> histograms = new ArrayList<>();
        List<Thread> workers = new ArrayList<>();
        long start = System.nanoTime();
        for (int t = 0; t < threads; t++) {
            Histogram h = newHistogram();
            histograms.add(h);
            SplittableRandom random = new SplittableRandom(KeyChooser.mix64(seed * 1_000_003L + t));
            Thread w = new Thread(
                    () -> {
                        try {
                            for (long i = next.getAndIncrement();
                                    i < ops && failure.get() == null && !stop.getAsBoolean();
                                    i = next.getAndIncrement()) {
                                long due = 0;
                                if (perSecond != null) {
                                    due = start + (long) (i * 1e9 / perSecond);
                                    for (long wait = due - System.nanoTime();
                                            wait > 0;
                                            wait = due - System.nanoTime()) {
                                        java.util.concurrent.locks.LockSupport.parkNanos(wait);
                                    }
                                }
                                long t0 = System.nanoTime();
                                boolean ok = op.run(i, random);
                                long from = perSecond != null ? due : t0;
                                h.recordValue(Math.min(MAX_NANOS, System.nanoTime() - from));
                                if (!ok) {
                                    wrong.incrementAndGet();
                                }
                                progress.incrementAndGet();
                            }
                        } catch (Throwable e) {
                            failure.compareAndSet(null, e);
                        }
                    },
                    "needle-bench-client-" + t);
            workers.add(w);
            w.start();
        }
        for (Thread w : workers) {
            try {
                w.join();
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                failure.compareAndSet(null, e);
            }
        }
        long nanos = System.nanoTime() - start;
        if (failure.get() != null) {
            Throwable e = failure.get();
            throw new IllegalStateException("a client request failed: " + e, e);
        }
        Histogram all = newHistogram();
        histograms.forEach(all::add);
        return new Outcome(all, wrong.get(), nanos);
    }
}
