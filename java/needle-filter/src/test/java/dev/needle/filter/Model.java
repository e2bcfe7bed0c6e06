package dev.needle.filter;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/** Ground truth for the randomized tests: how many live and deleted entries each key hash holds. */
final class Model {
    private final Map<Long, int[]> entries = new HashMap<>();
    private final List<Long> keys = new ArrayList<>();

    void addLive(long k) {
        counts(k)[0]++;
    }

    void liveToDeleted(long k) {
        int[] c = counts(k);
        c[0]--;
        c[1]++;
    }

    void deletedToLive(long k) {
        int[] c = counts(k);
        c[1]--;
        c[0]++;
    }

    void removeLive(long k) {
        counts(k)[0]--;
    }

    void removeDeleted(long k) {
        counts(k)[1]--;
    }

    int live(long k) {
        int[] c = entries.get(k);
        return c == null ? 0 : c[0];
    }

    int deleted(long k) {
        int[] c = entries.get(k);
        return c == null ? 0 : c[1];
    }

    /** Every key ever touched, for picking targets of the next operation. */
    List<Long> keys() {
        return keys;
    }

    Iterable<Map.Entry<Long, int[]>> all() {
        return entries.entrySet();
    }

    private int[] counts(long k) {
        return entries.computeIfAbsent(k, x -> {
            keys.add(x);
            return new int[2];
        });
    }
}
