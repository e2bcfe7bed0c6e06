package dev.needle.cassandra.node;

import java.util.ArrayDeque;

/**
 * When an owner's queued changes go out: at once in a light stream, gathered into fuller batches
 * in a heavy one, and always before a heartbeat ({@link #batchDue}). One per owner and table, used
 * by the publisher's thread.
 */
final class BatchPacing {
    /** When the last batch of changes went out. */
    long lastBatchMillis;

    /**
     * How long changes may wait for more to share their message while batches follow each other
     * closely: half the staleness bound S, the heartbeats' interval, between {@link
     * Publisher#BATCH_MILLIS} and {@link #MAX_HOLD_MILLIS}. Every message costs its sender and
     * receiver about the same CPU whatever it carries (a Cassandra mutation message), and a node
     * sends one per receiver per batch, so under load the hold sets what the sync costs
     * (docs/node-filters.md, Costs). While changes flow, a copy hears from its owner every S/2
     * plus a round, as it does from heartbeats when nothing changes, which leaves the other half
     * of S for the message to arrive. A larger S buys a cheaper sync: fewer, fuller messages.
     */
    static long holdMillis(long stalenessMillis) {
        return Math.max(Publisher.BATCH_MILLIS, Math.min(MAX_HOLD_MILLIS, stalenessMillis / 2));
    }

    static final long MAX_HOLD_MILLIS = 1000;
    /** Changes that make a message worth sending at once (4 KB of them). */
    static final int FULL_BATCH = 512;
    /**
     * Changes that pay for their message many times over (about 3 bytes each for its 180): they
     * go once {@link #MIN_GAP_MILLIS} has passed since the last batch, so a copy under a heavy
     * stream lags by about that gap, not by the whole hold.
     */
    static final int PAYING_BATCH = 64;
    /** The least time between two batches that {@link #PAYING_BATCH} sends (at most 20 a second). */
    static final long MIN_GAP_MILLIS = 50;
    /**
     * Changes a second (those sent in the last second and those queued) from which a stream is
     * heavy: two {@link #PAYING_BATCH}es a second. A heavy stream's batches go at most {@link
     * #heavyHoldMillis} apart, so that a dip in it (a flush, a pause of its writers, a node that
     * waits for a core) does not keep the changes before the dip waiting for the whole hold: such
     * a batch still carries about 25 changes or more (a heavy stream's fifth of a second), at most
     * one message per 25 changes. A lighter stream, such as tens of changes a second per receiver,
     * waits for the whole hold as before: it is where the hold saves the most messages.
     */
    static final int HEAVY_CHANGES_PER_SECOND = 2 * PAYING_BATCH;

    /** Whether a stream that sent {@code sent} changes in the last second and queues {@code queued} is heavy. */
    static boolean heavy(long sent, long queued) {
        return sent + queued >= HEAVY_CHANGES_PER_SECOND;
    }

    /**
     * The longest a heavy stream's change waits for others ({@link #HEAVY_CHANGES_PER_SECOND}):
     * two fifths of the hold, S/5 for a hold of S/2. That leaves S/20 of a quarter of S for the
     * round that sends it and for the publisher to get a core, so that a heavy stream's changes
     * leave their owner within S/4. Never shorter than {@link #MIN_GAP_MILLIS} (nor longer than
     * the hold): a heavy stream of a short S does not send more often than a paying batch may.
     */
    static long heavyHoldMillis(long holdMillis) {
        return Math.max(Math.min(MIN_GAP_MILLIS, holdMillis), holdMillis * 2 / 5);
    }

    /**
     * Changes a second that a stream may carry and still send each at once: a light stream
     * (the changes of an idle cluster) costs a message per change, at most this many a second per
     * receiver (about 6 KB/s), and no change waits for others to share its message. A stream of
     * tens of changes a second per node (50 in the staleness probe's paced phase) is batched.
     */
    static final int LIGHT_CHANGES_PER_SECOND = 32;

    /**
     * When a table's next publisher round is due ({@code atMillis}), or sooner, at the change
     * that brings a receiver's queue to {@code wakeAtQueued} changes ({@link Integer#MAX_VALUE}:
     * none).
     */
    record NextRound(long atMillis, int wakeAtQueued) {}

    /**
     * When the publisher's next round for a table with {@code queued} changes waiting (not due)
     * at {@code nowMillis} is due, so that it runs when something may go rather than every {@link
     * Publisher#BATCH_MILLIS}: its rounds cost the node CPU whether or not they send anything.
     * With none waiting, at the next heartbeat ({@code nextBeatMillis}), or at the next change if
     * that one goes at once ({@link #batchDue}: a light stream, or after a quiet spell). With
     * changes held for a heavier stream, when they may go: at the end of the hold (a heavy
     * stream's shorter one), when {@link #MIN_GAP_MILLIS} lets the {@link #PAYING_BATCH} already
     * waiting go, at the change that makes a paying batch after the gap (a full batch within it),
     * or at the change that makes the stream heavy.
     */
    NextRound nextRound(int queued, long nowMillis, long holdMillis, long nextBeatMillis) {
        if (queued == 0 && due(1, nowMillis, false, holdMillis)) {
            return new NextRound(nextBeatMillis, 1);
        }
        long at = Math.min(nextBeatMillis, lastBatchMillis + holdMillis);
        int wakeAt = PAYING_BATCH;
        long sent = sentInLastSecond(nowMillis);
        long heavyHoldEnd = lastBatchMillis + heavyHoldMillis(holdMillis);
        if (!heavy(sent, Math.max(queued, 1))) { // with its next change
            wakeAt = (int) Math.min(wakeAt, HEAVY_CHANGES_PER_SECOND - sent); // more than are queued
        } else if (heavyHoldEnd > nowMillis) {
            at = Math.min(at, heavyHoldEnd);
        } else {
            wakeAt = 1; // the heavy stream's shorter hold is over: its next change goes at once
        }
        if (queued >= PAYING_BATCH) {
            at = Math.min(at, lastBatchMillis + MIN_GAP_MILLIS);
            wakeAt = FULL_BATCH;
        }
        return new NextRound(Math.max(at, nowMillis + 1), wakeAt);
    }

    /** Times and sizes of the batches sent in about the last second, oldest first (publisher thread). */
    private final ArrayDeque<long[]> recentBatches = new ArrayDeque<>();
    /** The changes of {@link #recentBatches}. */
    private long recentChanges;

    /** Records a batch of {@code changes} (the most any receiver got) sent at {@code nowMillis}. */
    void batchSent(long nowMillis, int changes) {
        lastBatchMillis = nowMillis;
        recentBatches.addLast(new long[] {nowMillis, changes});
        recentChanges += changes;
    }

    /** The changes sent in the last second, by the batches {@link #batchSent} recorded. */
    long sentInLastSecond(long nowMillis) {
        while (!recentBatches.isEmpty() && recentBatches.peekFirst()[0] <= nowMillis - 1000) {
            recentChanges -= recentBatches.pollFirst()[1];
        }
        return recentChanges;
    }

    /** Whether {@code queued} changes go out at {@code nowMillis} ({@link #batchDue}). */
    boolean due(int queued, long nowMillis, boolean beatDue, long holdMillis) {
        return batchDue(queued, nowMillis - lastBatchMillis, beatDue, holdMillis, sentInLastSecond(nowMillis));
    }

    /**
     * Whether the queued changes go out now, as Nagle's algorithm decides for small packets: every
     * batch costs one message to every receiver (about 180 bytes), whatever it carries (about 9
     * bytes per change). In a light stream (with the queued ones, at most {@link
     * #LIGHT_CHANGES_PER_SECOND} changes in the last second) each change goes at once, in the
     * next publisher round (within {@link Publisher#BATCH_MILLIS}), as does a change after a
     * quiet spell of {@code holdMillis}; while a heavier stream flows, changes gather until
     * {@link #FULL_BATCH} of them wait, or {@link #PAYING_BATCH} and {@link #MIN_GAP_MILLIS} has
     * passed since the last batch, or {@code holdMillis} has ({@link #heavyHoldMillis} in a heavy
     * stream: {@link #HEAVY_CHANGES_PER_SECOND}). They also go before a heartbeat,
     * which must never say the owner is further on than the batches sent (a copy would wait for
     * the gap to close).
     *
     * @param queued         changes waiting (the most any receiver has)
     * @param sinceLastBatch milliseconds since the last batch went out
     * @param beatDue        a heartbeat goes out in this round
     * @param holdMillis     the longest a change waits for others ({@link #holdMillis(long)})
     * @param sentLastSecond changes sent in the last second (the most any receiver got)
     */
    static boolean batchDue(int queued, long sinceLastBatch, boolean beatDue, long holdMillis, long sentLastSecond) {
        return queued > 0
                && (beatDue
                        || queued >= FULL_BATCH
                        || sinceLastBatch >= holdMillis
                        || (heavy(sentLastSecond, queued) && sinceLastBatch >= heavyHoldMillis(holdMillis))
                        || sentLastSecond + queued <= LIGHT_CHANGES_PER_SECOND
                        || (queued >= PAYING_BATCH && sinceLastBatch >= MIN_GAP_MILLIS));
    }
}
