package dev.needle.filter.bench;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OperationsPerInvocation;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Nanoseconds per lookup on a full filter of {@code n} keys, {@value #BATCH} keys per invocation.
 * The filter is filled once per trial: built from the keys, or loaded from the {@link FilterCache}
 * when the insert benchmark of the same run already built it.
 * Positive lookups walk the inserted keys in insertion order (which says nothing about where
 * they sit in the filter); negative lookups walk {@code n} keys that were never inserted. The
 * number of hits is returned so that the JIT cannot drop the lookups.
 */
@BenchmarkMode(Mode.AverageTime)
@OutputTimeUnit(TimeUnit.NANOSECONDS)
@State(Scope.Benchmark)
@Fork(1)
public class LookupBenchmark {
    public static final int BATCH = 1024;

    @Param({
        "needle-cuckoo",
        "needle-cuckoo-batch",
        "needle-cuckoo-xxh64",
        "needle-deletion-aware",
        "needle-adaptive",
        "needle-bloom",
        "cuckoofilter4j",
        "fastfilter-cuckoo",
        "fastfilter-bloom",
        "fastfilter-blockedbloom",
        "guava-bloom"
    })
    public String library;

    @Param({"1000000", "50000000"})
    public int n;

    @Param({"0.01", "0.001", "0.0001"})
    public double fpp;

    private long[] inserted;
    private long[] absent;
    private Library lib;
    private int batches;
    private int next;
    private long positiveMisses;
    private long positiveCalls;

    @Setup(Level.Trial)
    public void fill() {
        inserted = Keys.inserted(n);
        lib = Library.create(library, n, fpp);
        long failed = FilterCache.loadOrBuild(lib, library, n, fpp, inserted);
        if (failed != 0) {
            System.out.println("WARNING: " + library + " n=" + n + " fpp=" + fpp + ": " + failed + " failed inserts");
        }
        absent = Keys.absent(n);
        batches = n / BATCH;
    }

    private int nextOffset() {
        int b = next;
        next = b + 1 == batches ? 0 : b + 1;
        return b * BATCH;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int positive() {
        int from = nextOffset();
        int hits = lib.countContained(inserted, from, from + BATCH);
        positiveMisses += BATCH - hits;
        positiveCalls++;
        return hits;
    }

    @Benchmark
    @OperationsPerInvocation(BATCH)
    public int negative() {
        int from = nextOffset();
        return lib.countContained(absent, from, from + BATCH);
    }

    @TearDown(Level.Trial)
    public void check() {
        if (positiveMisses != 0) {
            System.out.println("WARNING: " + library + " n=" + n + " fpp=" + fpp + ": " + positiveMisses
                    + " false negatives in " + positiveCalls * BATCH + " positive lookups");
        }
    }
}
