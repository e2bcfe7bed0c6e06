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
import org.openjdk.jmh.infra.Blackhole;

/**
 * Time to build a full filter of {@code n} keys, creation included (one SingleShot invocation =
 * one complete build). The score is milliseconds per build; summarize.py divides by {@code n}
 * for nanoseconds per key. Iteration counts come from run.sh.
 */
@BenchmarkMode(Mode.SingleShotTime)
@OutputTimeUnit(TimeUnit.MILLISECONDS)
@State(Scope.Benchmark)
@Fork(1)
public class InsertBenchmark {
    @Param({
        "needle-cuckoo",
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

    private long[] keys;
    private Library lib;
    private long failedInserts;
    private long lastFailed;

    @Setup(Level.Trial)
    public void keys() {
        keys = Keys.inserted(n);
    }

    @Setup(Level.Iteration)
    public void fresh() {
        lib = Library.create(library, n, fpp);
    }

    @Benchmark
    public void insertAll(Blackhole bh) {
        lastFailed = lib.build(keys);
        failedInserts += lastFailed;
        bh.consume(lib.filter());
    }

    @TearDown(Level.Iteration)
    public void drop() {
        // Unmeasured: hand the filter just built to the lookup/delete/space runs (FilterCache), then
        // drop it so that the next iteration's build starts from a heap without it.
        FilterCache.save(lib, library, n, fpp, lastFailed);
        lib = null;
    }

    @TearDown(Level.Trial)
    public void report() {
        if (failedInserts != 0) {
            // Visible in the JMH log; the space/FPR run reports the exact counts in its JSON.
            System.out.println(
                    "WARNING: " + library + " n=" + n + " fpp=" + fpp + ": " + failedInserts + " failed inserts");
        }
    }
}
