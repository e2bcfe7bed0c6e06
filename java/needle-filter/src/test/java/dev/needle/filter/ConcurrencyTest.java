package dev.needle.filter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayList;
import java.util.List;
import java.util.SplittableRandom;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongPredicate;
import org.junit.jupiter.api.Test;

/**
 * The concurrency model of {@link Filter}: lock-free readers beside serialized writers. A set
 * of stable keys is inserted first and never touched again; writers then churn other keys at
 * high load (so every insert kicks fingerprints between buckets) while readers look the stable
 * keys up without pause. A single negative answer for a stable key is a false negative that a
 * reader saw mid-kick. The runs are bounded by operation counts, not by time.
 */
class ConcurrencyTest {
    private static final int READERS = 3;

    @Test
    void cuckooReadersNeverMissAStableKey() throws Exception {
        CuckooFilter f = CuckooFilter.create(new CuckooSizing(12, 4, 5_000, 4));
        runScenario(f, f::insertHash, f::deleteHash, f::mightContainHash, batchProbe(f), 2);
    }

    @Test
    void deletionAwareReadersAlwaysSeeStableKeysLive() throws Exception {
        DeletionAwareCuckooFilter f = DeletionAwareCuckooFilter.create(new CuckooSizing(12, 4, 5_000, 4));
        // Writers churn by inserting and then marking deleted and purging: every transition kind runs.
        LongPredicate remove = k -> f.markDeletedHash(k) && f.purgeHash(k);
        runScenario(f, f::insertHash, remove, k -> f.lookupHash(k) == KeyState.LIVE, null, 2);
    }

    @Test
    void adaptiveReadersNeverMissWhileFalsePositivesAreRemoved() throws Exception {
        AdaptiveCuckooFilter f = AdaptiveCuckooFilter.create(new CuckooSizing(8, 4, 5_000, 4));
        SplittableRandom r = new SplittableRandom(5);
        LongPredicate insertAndAdapt = k -> {
            boolean ok = f.insertHash(k);
            long q;
            synchronized (r) {
                q = r.nextLong();
            }
            if (f.mightContainHash(q)) {
                f.reportFalsePositive(q); // q is random, never inserted: a genuine false positive
            }
            return ok;
        };
        runScenario(f, insertAndAdapt, f::deleteHash, f::mightContainHash, null, 2);
    }

    @Test
    void bloomReadersSeeEveryInsertedKey() throws Exception {
        BloomFilter f = BloomFilter.create(40_000, 0.01);
        runScenario(f, f::insertHash, k -> true, f::mightContainHash, null, 1);
    }

    private static LongPredicate batchProbe(CuckooFilter f) {
        return k -> {
            long[] keys = {k, k ^ 1, k};
            boolean[] out = new boolean[3];
            f.mightContainBatch(keys, 0, 3, out);
            return out[0] && out[2];
        };
    }

    private static void runScenario(
            Filter f,
            LongPredicate insert,
            LongPredicate remove,
            LongPredicate probe,
            LongPredicate batchProbe,
            int writers)
            throws Exception {
        SplittableRandom r = new SplittableRandom(11);
        long[] stable = new long[(int) (f.capacity() * 0.6)];
        for (int i = 0; i < stable.length; i++) {
            stable[i] = r.nextLong();
            assertTrue(insert.test(stable[i]));
        }
        AtomicBoolean done = new AtomicBoolean();
        AtomicLong misses = new AtomicLong();
        AtomicLong lookups = new AtomicLong();
        List<Thread> threads = new ArrayList<>();
        List<Throwable> errors = java.util.Collections.synchronizedList(new ArrayList<>());
        for (int t = 0; t < READERS; t++) {
            int id = t;
            threads.add(new Thread(
                    () -> {
                        int i = id;
                        long n = 0;
                        while (!done.get()) {
                            long k = stable[i];
                            if (!probe.test(k) || (batchProbe != null && !batchProbe.test(k))) {
                                misses.incrementAndGet();
                            }
                            i = (i + READERS) % stable.length;
                            n++;
                        }
                        lookups.addAndGet(n);
                    },
                    "reader-" + t));
        }
        List<Thread> writerThreads = new ArrayList<>();
        for (int w = 0; w < writers; w++) {
            long seed = 100 + w;
            writerThreads.add(new Thread(
                    () -> {
                        try {
                            SplittableRandom wr = new SplittableRandom(seed);
                            // Churn keys: fill this writer's share of the remaining room, then replace keys one by one.
                            int room = (int) (f.capacity() * 0.35 / writers);
                            long[] churn = new long[room];
                            int held = 0;
                            for (int op = 0; op < 200_000; op++) {
                                if (held < room) {
                                    long k = wr.nextLong();
                                    if (insert.test(k)) {
                                        churn[held++] = k;
                                    }
                                } else {
                                    int victim = wr.nextInt(held);
                                    assertTrue(remove.test(churn[victim]), "remove of a held churn key failed");
                                    churn[victim] = churn[--held];
                                }
                            }
                        } catch (Throwable e) {
                            errors.add(e);
                        }
                    },
                    "writer-" + w));
        }
        threads.forEach(Thread::start);
        writerThreads.forEach(Thread::start);
        for (Thread t : writerThreads) {
            t.join();
        }
        done.set(true);
        for (Thread t : threads) {
            t.join();
        }
        assertTrue(errors.isEmpty(), () -> "writer failed: " + errors);
        assertEquals(
                0, misses.get(), "readers saw " + misses.get() + " false negatives in " + lookups.get() + " lookups");
        assertTrue(lookups.get() > 10_000, "readers made only " + lookups.get() + " lookups");
        for (long k : stable) {
            assertTrue(probe.test(k));
        }
    }
}
