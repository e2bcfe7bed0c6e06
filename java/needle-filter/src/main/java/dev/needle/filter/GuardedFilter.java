package dev.needle.filter;

import java.util.concurrent.locks.StampedLock;
import java.util.function.LongSupplier;

/**
 * The concurrency model of {@link Filter}, in one place: writers hold the write lock; a lookup
 * probes without a lock and keeps its answer only if no write overlapped it (the stamp still
 * validates), else probes again under the read lock. Subclasses provide the probes.
 */
abstract class GuardedFilter {
    final StampedLock lock = new StampedLock();

    /** A membership probe, run without a lock; it must tolerate any concurrent state. */
    boolean probe(long hash) {
        throw new UnsupportedOperationException();
    }

    /** A three-state probe, run without a lock; it must tolerate any concurrent state. */
    KeyState probeState(long hash) {
        throw new UnsupportedOperationException();
    }

    final boolean guardedProbe(long hash) {
        long stamp = lock.tryOptimisticRead();
        boolean found = probe(hash);
        if (lock.validate(stamp)) {
            return found;
        }
        stamp = lock.readLock();
        try {
            return probe(hash);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    final KeyState guardedProbeState(long hash) {
        long stamp = lock.tryOptimisticRead();
        KeyState state = probeState(hash);
        if (lock.validate(stamp)) {
            return state;
        }
        stamp = lock.readLock();
        try {
            return probeState(hash);
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** One stamp for a whole batch: validation costs a fence, so it is paid once. */
    final void guardedProbeBatch(long[] hashes, int from, int to, boolean[] out) {
        long stamp = lock.tryOptimisticRead();
        for (int i = from; i < to; i++) {
            out[i] = probe(hashes[i]);
        }
        if (lock.validate(stamp)) {
            return;
        }
        stamp = lock.readLock();
        try {
            for (int i = from; i < to; i++) {
                out[i] = probe(hashes[i]);
            }
        } finally {
            lock.unlockRead(stamp);
        }
    }

    final void guardedProbeStateBatch(long[] hashes, int from, int to, KeyState[] out) {
        long stamp = lock.tryOptimisticRead();
        for (int i = from; i < to; i++) {
            out[i] = probeState(hashes[i]);
        }
        if (lock.validate(stamp)) {
            return;
        }
        stamp = lock.readLock();
        try {
            for (int i = from; i < to; i++) {
                out[i] = probeState(hashes[i]);
            }
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** A statistic read under the read lock (not on any hot path). */
    final long readLocked(LongSupplier value) {
        long stamp = lock.readLock();
        try {
            return value.getAsLong();
        } finally {
            lock.unlockRead(stamp);
        }
    }

    /** Runs a mutation under the write lock. */
    final boolean writeLocked(java.util.function.BooleanSupplier mutation) {
        long stamp = lock.writeLock();
        try {
            return mutation.getAsBoolean();
        } finally {
            lock.unlockWrite(stamp);
        }
    }
}
