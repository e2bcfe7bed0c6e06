package dev.needle.testhooks;

import java.util.concurrent.DelayQueue;
import java.util.concurrent.Delayed;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.LockSupport;

/**
 * Runs actions after a delay of a fraction of a millisecond: a DelayQueue for the wait, then a
 * short spin for the last {@value #SPIN_NANOS} ns, since the OS timer alone is coarser than the
 * delays emulated. Actions run on one daemon thread, earliest due first, never early.
 */
public final class DelayLine {
    static final long SPIN_NANOS = 60_000;

    private record Entry(long due, long seq, Runnable action) implements Delayed {
        @Override
        public long getDelay(TimeUnit unit) {
            return unit.convert(due - SPIN_NANOS - System.nanoTime(), TimeUnit.NANOSECONDS);
        }

        @Override
        public int compareTo(Delayed o) {
            Entry e = (Entry) o;
            int c = Long.compare(due, e.due);
            return c != 0 ? c : Long.compare(seq, e.seq);
        }
    }

    private final DelayQueue<Entry> queue = new DelayQueue<>();
    private final Lateness lateness;
    private long seq;

    public DelayLine(String threadName) {
        this(threadName, new Lateness("unnamed"));
    }

    /** A delay line that records how late each action ran in {@code lateness}. */
    public DelayLine(String threadName, Lateness lateness) {
        this.lateness = lateness;
        Thread t = new Thread(this::run, threadName);
        t.setDaemon(true);
        t.start();
    }

    /** Runs {@code action} at {@code dueNanos} ({@link System#nanoTime()} clock) or just after. */
    public synchronized void at(long dueNanos, Runnable action) {
        queue.add(new Entry(dueNanos, seq++, action));
    }

    private void run() {
        while (true) {
            Entry e;
            try {
                e = queue.take();
            } catch (InterruptedException ie) {
                return;
            }
            long now;
            while ((now = System.nanoTime()) < e.due) {
                Thread.onSpinWait();
            }
            lateness.record(now - e.due);
            try {
                e.action.run();
            } catch (RuntimeException ex) {
                // A message that cannot be sent is lost, as on a real network; the sender times out.
            }
            if (queue.isEmpty()) {
                LockSupport.parkNanos(1_000);
            }
        }
    }
}
