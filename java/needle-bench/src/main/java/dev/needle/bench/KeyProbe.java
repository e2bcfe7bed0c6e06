package dev.needle.bench;

import com.datastax.oss.driver.api.core.CqlSession;
import com.datastax.oss.driver.api.core.cql.PreparedStatement;
import com.fasterxml.jackson.annotation.JsonInclude;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.TreeMap;
import java.util.concurrent.atomic.AtomicReference;

/**
 * The staleness probe of one table in one phase of {@link StalenessProbe}: writes new keys through
 * their owners and reads each back through every other node until each has returned it, and keeps
 * what those reads saw: misses by time since the acknowledgement, when every coordinator had a key,
 * and every miss later than the bound S.
 */
final class KeyProbe {
    /** Bounds of the curve's bins of time since the acknowledgement, in milliseconds. */
    static final double[] BINS_MS = {0, 0.5, 1, 2, 3, 5, 10, 20, 50, 100, 250, 1000, 5000};
    /** A coordinator that has not returned a probe key this long after its write fails the run. */
    private static final long GIVE_UP_NANOS = Duration.ofSeconds(30).toNanos();

    final Variant v;
    private final CqlSession[] sessions;
    private final int nodes;
    private final ByteBuffer value;
    private final long stalenessNanos;
    private final List<StalenessResult.Violation> violations;
    private final PreparedStatement[] insert;
    private final PreparedStatement[] select;
    private final long[] readsPerBin = new long[BINS_MS.length];
    private final long[] missesPerBin = new long[BINS_MS.length];
    /** Per key: the start of the read after which every coordinator had it. */
    private final List<Long> visible = new ArrayList<>();
    /** Per key that was missed: the start of its last missed read. */
    private final List<Long> lastMiss = new ArrayList<>();
    /** How many keys were missed how many times. */
    private final Map<Integer, Integer> missesPerKey = new TreeMap<>();

    private long reads;
    private long misses;

    /**
     * @param sessions       [n]: a session whose every request goes to node n (index 0 unused)
     * @param value          the value every written row holds
     * @param stalenessNanos the bound S: a read that misses later than this is a violation
     * @param violations     where violations are added
     */
    KeyProbe(
            Variant v,
            CqlSession[] sessions,
            ByteBuffer value,
            long stalenessNanos,
            List<StalenessResult.Violation> violations) {
        this.v = v;
        this.sessions = sessions;
        this.nodes = sessions.length - 1;
        this.value = value;
        this.stalenessNanos = stalenessNanos;
        this.violations = violations;
        this.insert = new PreparedStatement[nodes + 1];
        this.select = new PreparedStatement[nodes + 1];
        String t = StalenessProbe.KEYSPACE + "." + v.table();
        for (int n = 1; n <= nodes; n++) {
            insert[n] = sessions[n].prepare(StalenessProbe.insertCql(v));
            select[n] = sessions[n].prepare("SELECT ck FROM " + t + " WHERE pk = ?");
        }
    }

    /** Writes a new key through its owner and reads it through every other node until each has it. */
    void key(
            StalenessProbe.KeyOwners owners,
            SplittableRandom random,
            AtomicReference<Throwable> loadFailure,
            boolean record) {
        if (loadFailure.get() != null) {
            throw new IllegalStateException("the load failed: " + loadFailure.get(), loadFailure.get());
        }
        long key;
        int owner;
        do {
            key = random.nextLong() & Long.MAX_VALUE;
            owner = owners.owner(key);
        } while (owner < 1);
        sessions[owner].execute(insert[owner].bind(key, value.duplicate()));
        long ack = System.nanoTime();
        long seen = 0, missedAt = -1;
        int missed = 0;
        boolean[] found = new boolean[nodes + 1];
        found[owner] = true;
        for (int left = nodes - 1; left > 0; ) {
            for (int n = 1; n <= nodes; n++) {
                if (found[n]) {
                    continue;
                }
                long start = System.nanoTime();
                boolean hit = sessions[n].execute(select[n].bind(key)).one() != null;
                long since = start - ack;
                if (record) {
                    readsPerBin[bin(since)]++;
                    reads++;
                }
                if (hit) {
                    found[n] = true;
                    left--;
                    seen = Math.max(seen, since);
                    continue;
                }
                missed++;
                missedAt = since;
                if (record) {
                    missesPerBin[bin(since)]++;
                    misses++;
                }
                if (since > stalenessNanos) {
                    violations.add(new StalenessResult.Violation(
                            v.table(), key, owner, n, LatencyCalibration.round(since / 1e6)));
                }
                if (since > GIVE_UP_NANOS) {
                    throw new IllegalStateException("node " + n + " still misses key " + key + " of "
                            + v.table() + " written through node " + owner + " " + since / 1_000_000_000
                            + " s ago");
                }
            }
        }
        if (record) {
            visible.add(seen);
            if (missedAt >= 0) {
                lastMiss.add(missedAt);
            }
            missesPerKey.merge(missed, 1, Integer::sum);
        }
    }

    /**
     * What one table's probe saw in a phase: keys, reads and misses, how many keys were missed how
     * many times, when every coordinator had a key, each missed key's last miss, the curve of
     * misses by time since the acknowledgement, and (Needle's table) its coordinators' decisions.
     */
    record Result(
            int keys,
            long reads,
            long misses,
            int keysMissedOnceOrMore,
            Map<Integer, Integer> keysByMisses,
            StalenessResult.Percentiles visibleAtEveryCoordinatorMs,
            StalenessResult.Percentiles lastMissMs,
            List<Bin> curve,
            @JsonInclude(JsonInclude.Include.NON_NULL) Map<String, Long> coordinatorDecisions) {

        Result withDecisions(Map<String, Long> decisions) {
            return new Result(
                    keys,
                    reads,
                    misses,
                    keysMissedOnceOrMore,
                    keysByMisses,
                    visibleAtEveryCoordinatorMs,
                    lastMissMs,
                    curve,
                    decisions);
        }
    }

    /** Reads and misses of one bin of time since the acknowledgement ({@code toMs} null: the last, open bin). */
    record Bin(double fromMs, Double toMs, long reads, long misses, double missFraction) {}

    Result result(String label) {
        List<Bin> curve = new ArrayList<>();
        for (int b = 0; b < BINS_MS.length; b++) {
            if (readsPerBin[b] == 0) {
                continue;
            }
            curve.add(new Bin(
                    BINS_MS[b],
                    b + 1 < BINS_MS.length ? BINS_MS[b + 1] : null,
                    readsPerBin[b],
                    missesPerBin[b],
                    (double) missesPerBin[b] / readsPerBin[b]));
        }
        Result r = new Result(
                visible.size(),
                reads,
                misses,
                lastMiss.size(),
                new TreeMap<>(missesPerKey),
                StalenessResult.Percentiles.ofNanos(longs(visible)),
                StalenessResult.Percentiles.ofNanos(longs(lastMiss)),
                curve,
                null);
        System.err.printf(
                "staleness: %s %s: %,d keys, %,d reads, %,d missed; every coordinator had a key after %s ms;"
                        + " keys by misses %s; miss fraction by ms since the write %s%n",
                v.name(),
                label,
                visible.size(),
                reads,
                misses,
                r.visibleAtEveryCoordinatorMs(),
                missesPerKey,
                curve.stream()
                        .map(c -> c.fromMs() + ": " + String.format("%.3f", c.missFraction()))
                        .toList());
        return r;
    }

    /** The bin of {@link #BINS_MS} that a time since the acknowledgement falls in. */
    static int bin(long nanos) {
        double ms = nanos / 1e6;
        int b = 0;
        while (b + 1 < BINS_MS.length && ms >= BINS_MS[b + 1]) {
            b++;
        }
        return b;
    }

    private static long[] longs(List<Long> v) {
        return v.stream().mapToLong(Long::longValue).toArray();
    }
}
