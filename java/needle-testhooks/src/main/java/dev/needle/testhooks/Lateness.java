package dev.needle.testhooks;

import java.util.concurrent.atomic.AtomicLongArray;

/**
 * How late the delay line released its messages (actual release minus due time), in whole
 * microseconds up to {@value #MAX_MICROS} (later ones counted in the last bucket): the timer's
 * jitter, which an emulated delay adds to the configured one. Thread safe.
 */
public final class Lateness implements LatenessMBean {
    static final int MAX_MICROS = 10_000;
    private final AtomicLongArray counts = new AtomicLongArray(MAX_MICROS + 1);
    private final String profile;

    public Lateness(String profile) {
        this.profile = profile;
    }

    void record(long lateNanos) {
        counts.incrementAndGet((int) Math.min(MAX_MICROS, Math.max(0, lateNanos / 1000)));
    }

    @Override
    public String getProfile() {
        return profile;
    }

    @Override
    public long getMessagesDelayed() {
        long n = 0;
        for (int i = 0; i < counts.length(); i++) {
            n += counts.get(i);
        }
        return n;
    }

    /** The lateness at quantile {@code q} in microseconds (bucket floor), or -1 with no message yet. */
    long quantileMicros(double q) {
        long total = getMessagesDelayed();
        if (total == 0) {
            return -1;
        }
        long rank = (long) Math.ceil(q * total);
        long seen = 0;
        for (int i = 0; i < counts.length(); i++) {
            seen += counts.get(i);
            if (seen >= Math.max(1, rank)) {
                return i;
            }
        }
        return MAX_MICROS;
    }

    @Override
    public long getLatenessP50Micros() {
        return quantileMicros(0.5);
    }

    @Override
    public long getLatenessP99Micros() {
        return quantileMicros(0.99);
    }

    @Override
    public long getLatenessMaxMicros() {
        return quantileMicros(1.0);
    }

    @Override
    public void reset() {
        for (int i = 0; i < counts.length(); i++) {
            counts.set(i, 0);
        }
    }
}
