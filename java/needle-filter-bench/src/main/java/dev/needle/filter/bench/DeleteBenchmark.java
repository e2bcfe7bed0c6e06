package dev.needle.filter.bench;

import java.util.concurrent.TimeUnit;
import org.openjdk.jmh.annotations.Benchmark;
import org.openjdk.jmh.annotations.BenchmarkMode;
import org.openjdk.jmh.annotations.Fork;
import org.openjdk.jmh.annotations.Level;
import org.openjdk.jmh.annotations.Mode;
import org.openjdk.jmh.annotations.OutputTimeUnit;
import org.openjdk.jmh.annotations.Param;
import org.openjdk.jmh.annotations.Scope;
import org.openjdk.jmh.annotations.Setup;
import org.openjdk.jmh.annotations.State;
import org.openjdk.jmh.annotations.TearDown;

/**
 * Time to delete every inserted key, in insertion order, from a full filter of {@code n} keys
 * (one SingleShot invocation = all n deletes; before each iteration, unmeasured, the full
 * filter is loaded from the {@link FilterCache} or rebuilt). Score in milliseconds; summarize.py divides by {@code n}. Only libraries that
 * can delete take part: Bloom filters and fastfilter's cuckoo filters cannot.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@State(Scope.Benchmark)
@Fork(1)
public class DeleteBenchmark {
    @Param({"needle-cuckoo", "needle-deletion-aware", "needle-adaptive", "cuckoofilter4j"})
    public String library;

    @Param({"1000000", "50000000"})
    public int n;

    @Param({"0.01", "0.001", "0.0001"})
    public double fpp;

    private long[] keys;
    private Library lib;
    private long failedDeletes;

    @Setup(Level.Trial)
    public void keys() {
        keys = Keys.inserted(n);
    }

    @Setup(Level.Iteration)
    public void fill() {
        lib = null;
        lib = Library.create(library, n, fpp);
        FilterCache.loadOrBuild(lib, library, n, fpp, keys);
    }

    @Benchmark
    public long deleteAll() {
        Library l = lib;
        long failed = 0;
        for (long k : keys) {
            if (!l.delete(k)) {
                failed++;
            }
        }
        failedDeletes += failed;
        return failed;
    }

    @TearDown(Level.Trial)
    public void report() {
        if (failedDeletes != 0) {
            System.out.println(
                    "WARNING: " + library + " n=" + n + " fpp=" + fpp + ": " + failedDeletes + " failed deletes");
        }
    }
}
