package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** When an owner sends its queued changes ({@link BatchPacing#batchDue}) and its heartbeats ({@link OwnerTable#beatDue}). */
class BatchingTest {
    private static final long S = 1000;
    private static final long BEAT = OwnerTable.beatIntervalMillis(S);

    @Test
    void theHoldIsHalfTheStalenessBoundWithinItsLimits() {
        assertEquals(500, BatchPacing.holdMillis(1000));
        assertEquals(250, BatchPacing.holdMillis(500));
        assertEquals(30, BatchPacing.holdMillis(60));
        assertEquals(Publisher.BATCH_MILLIS, BatchPacing.holdMillis(10));
        assertEquals(BatchPacing.MAX_HOLD_MILLIS, BatchPacing.holdMillis(3_600_000));
        assertEquals(500, OwnerTable.beatIntervalMillis(1000));
    }

    /** Changes sent in the last second by a stream heavier than a light one. */
    private static final long HEAVY = 10 * BatchPacing.LIGHT_CHANGES_PER_SECOND;

    @Test
    void aChangeAfterAQuietSpellGoesAtOnce() {
        assertTrue(BatchPacing.batchDue(1, 50, false, 50, HEAVY));
        assertTrue(BatchPacing.batchDue(1, 5_000, false, 50, HEAVY));
    }

    @Test
    void inALightStreamEachChangeGoesAtOnce() {
        int light = BatchPacing.LIGHT_CHANGES_PER_SECOND;
        assertTrue(BatchPacing.batchDue(1, 5, false, 500, 0));
        assertTrue(BatchPacing.batchDue(1, 5, false, 500, light - 1));
        assertTrue(BatchPacing.batchDue(3, 5, false, 500, light - 3));
        assertFalse(BatchPacing.batchDue(1, 5, false, 500, light), "the stream is no longer light");
        assertFalse(BatchPacing.batchDue(3, 5, false, 500, light - 2));
    }

    @Test
    void streamingChangesWaitForAFullBatchTheHoldOrAHeartbeat() {
        assertFalse(BatchPacing.batchDue(1, 5, false, 50, HEAVY));
        assertFalse(BatchPacing.batchDue(BatchPacing.FULL_BATCH - 1, 49, false, 50, HEAVY));
        assertTrue(BatchPacing.batchDue(BatchPacing.FULL_BATCH, 0, false, 50, HEAVY), "a full batch");
        assertTrue(BatchPacing.batchDue(1, 5, true, 50, HEAVY), "before a heartbeat");
        assertFalse(BatchPacing.batchDue(0, 5_000, true, 50, HEAVY), "nothing to send");
    }

    @Test
    void aHeavyStreamSendsBatchesThatPayForTheirMessageAtMostEveryGap() {
        long gap = BatchPacing.MIN_GAP_MILLIS;
        int paying = BatchPacing.PAYING_BATCH;
        assertTrue(BatchPacing.batchDue(paying, gap, false, 500, HEAVY));
        assertFalse(BatchPacing.batchDue(paying, gap - 1, false, 500, HEAVY), "not sooner than the gap");
        assertFalse(BatchPacing.batchDue(paying - 1, 199, false, 500, HEAVY), "fewer wait for the hold");
    }

    @Test
    void aHeavyStreamsChangesWaitAtMostTwoFifthsOfTheHold() {
        long hold = BatchPacing.holdMillis(S);
        long heavyHold = BatchPacing.heavyHoldMillis(hold);
        int heavy = BatchPacing.HEAVY_CHANGES_PER_SECOND;
        assertEquals(S / 5, heavyHold);
        assertTrue(BatchPacing.batchDue(1, heavyHold, false, hold, heavy - 1), "sent and queued make it heavy");
        assertFalse(BatchPacing.batchDue(1, heavyHold - 1, false, hold, heavy - 1), "not before its hold");
        assertFalse(BatchPacing.batchDue(1, heavyHold, false, hold, heavy - 2), "a lighter stream waits for the hold");
        assertTrue(BatchPacing.batchDue(1, hold, false, hold, heavy - 2));
        assertEquals(BatchPacing.MIN_GAP_MILLIS, BatchPacing.heavyHoldMillis(100), "not sooner than a paying batch");
        assertEquals(30, BatchPacing.heavyHoldMillis(30), "never longer than the hold");
    }

    /** The changes of the last second, as the publisher records its batches. */
    @Test
    void theChangesOfTheLastSecondCountTheBatchesSentInIt() {
        BatchPacing o = new BatchPacing();
        assertEquals(0, o.sentInLastSecond(10_000));
        o.batchSent(10_000, 5);
        o.batchSent(10_400, 7);
        assertEquals(12, o.sentInLastSecond(10_999));
        assertEquals(7, o.sentInLastSecond(11_000), "the first batch is a second old");
        assertEquals(0, o.sentInLastSecond(11_400));
        assertEquals(10_400, o.lastBatchMillis, "the last batch's time");
    }

    @Test
    void whileBatchesFlowAHeartbeatThatSaysNothingNewWaitsUpToTwiceTheBound() {
        assertFalse(OwnerTable.beatDue(BEAT - 1, 0, 10_000, true, BEAT, S, 0), "not before its interval");
        assertTrue(OwnerTable.beatDue(BEAT, 0, 10_000, true, BEAT, S, 0), "no batches: at its interval");
        assertFalse(OwnerTable.beatDue(BEAT, 0, 20, true, BEAT, S, 0), "a batch went out lately");
        assertFalse(OwnerTable.beatDue(2 * S - 1, 0, 20, true, BEAT, S, 0));
        assertTrue(OwnerTable.beatDue(2 * S, 0, 20, true, BEAT, S, 0), "at least every 2S");
        assertTrue(OwnerTable.beatDue(BEAT, 0, 20, false, BEAT, S, 0), "another epoch or claim: at its interval");
    }

    /**
     * Heartbeats go on a grid of the interval that the node's phase shifts: tables whose bounds
     * are multiples of each other beat in the same rounds, so the publisher sends one message per
     * receiver for them all, and no gap between two heartbeats exceeds the interval: the publisher
     * wakes at the start of each table's next slot ({@link OwnerTable#nextBeatMillis}).
     */
    @Test
    void tablesWhoseBoundsAreMultiplesBeatInTheSameRounds() {
        long phase = 1_234;
        long[] bounds = {250, 1000, 4000};
        long[] lastBeat = new long[bounds.length];
        long[] longestGap = new long[bounds.length];
        int rounds = 0, sharedWithTheLongest = 0, beatsOfTheLongest = 0;
        for (long now = 7; now < 60_000; ) {
            boolean[] beat = new boolean[bounds.length];
            long next = now + Publisher.MAX_ROUND_MILLIS;
            for (int t = 0; t < bounds.length; t++) {
                long interval = OwnerTable.beatIntervalMillis(bounds[t]);
                beat[t] = OwnerTable.beatDue(now, lastBeat[t], 10_000, true, interval, bounds[t], phase);
                if (beat[t]) {
                    if (lastBeat[t] > 0) {
                        longestGap[t] = Math.max(longestGap[t], now - lastBeat[t]);
                    }
                    lastBeat[t] = now;
                }
                next = Math.min(next, OwnerTable.nextBeatMillis(now, lastBeat[t], 0, interval, bounds[t], phase));
            }
            rounds++;
            if (beat[2]) {
                beatsOfTheLongest++;
                if (beat[0] && beat[1]) {
                    sharedWithTheLongest++;
                }
            }
            now = next;
        }
        for (int t = 0; t < bounds.length; t++) {
            long interval = OwnerTable.beatIntervalMillis(bounds[t]);
            assertTrue(
                    longestGap[t] <= interval,
                    "S = " + bounds[t] + ": a gap of " + longestGap[t] + " ms between heartbeats");
        }
        assertTrue(beatsOfTheLongest >= 28, beatsOfTheLongest + " heartbeats in " + rounds + " rounds");
        assertEquals(beatsOfTheLongest, sharedWithTheLongest, "every heartbeat of the longest bound shared its round");
        assertFalse(
                OwnerTable.beatDue(999, 501, 10_000, false, 500, 1000, 0), "one slot, one heartbeat, whatever it says");
        assertTrue(OwnerTable.beatDue(999, 501, 10_000, false, 500, 1000, 1), "the phase moved the slot's end");
    }

    /**
     * The publisher's loop over random streams of changes (Poisson arrivals at rates from 5 to
     * 5,000 a second; each round at the time {@link BatchPacing#nextRound} gives, or at the next
     * change that wakes it, and at least every {@link Publisher#MAX_ROUND_MILLIS}): no
     * change waits longer than the hold plus a round, nor longer than a round after a quiet spell
     * or in a light stream; the owner is never silent for more than S/2 and a round (a copy stays
     * fresh); under load there is at most a batch per hold, per full batch or per paying batch
     * (and the light stream's first changes), batches fill, heartbeats almost stop, and under a
     * heavy stream no change waits longer than the least gap between batches and a round. A
     * stream of 200 a second, heavy but too thin to fill a paying batch often, sends each change
     * within S/5 and a round (after its first second), at 20 changes or more per batch. The
     * rounds themselves, which cost CPU whether or not they send anything, are at most two per
     * batch, one per heartbeat and one per {@link Publisher#MAX_ROUND_MILLIS}, not one per {@link
     * Publisher#BATCH_MILLIS}.
     */
    @Test
    void noChangeWaitsLongerThanTheHoldPlusARoundAndMessagesThinOutUnderLoad() {
        long hold = BatchPacing.holdMillis(S);
        for (double perSecond : new double[] {5, 50, 200, 500, 2000, 5000}) {
            SplittableRandom r = new SplittableRandom((long) perSecond);
            ArrayDeque<Double> queue = new ArrayDeque<>(); // arrival times of queued changes
            long seconds = 60;
            double[] arrivals = new double[(int) (perSecond * (seconds + 10))];
            for (int i = 1; i < arrivals.length; i++) {
                arrivals[i] = arrivals[i - 1] - Math.log(1 - r.nextDouble()) * 1000 / perSecond;
            }
            int nextArrival = 0;
            long lastBatch = -1_000, lastBeat = 0, lastMessage = 0;
            long batches = 0, beats = 0, changes = 0, rounds = 0;
            double longestWait = 0;
            double longestWaitAfterQuiet = 0;
            double longestWaitOnceFlowing = 0;
            long longestSilence = 0;
            BatchPacing sent = new BatchPacing(); // its record of batches
            for (long now = 0; now < seconds * 1000; ) {
                while (arrivals[nextArrival] <= now) {
                    queue.add(arrivals[nextArrival++]);
                }
                rounds++;
                boolean beatDue = OwnerTable.beatDue(now, lastBeat, now - lastBatch, true, BEAT, S, 0);
                if (BatchPacing.batchDue(queue.size(), now - lastBatch, beatDue, hold, sent.sentInLastSecond(now))) {
                    sent.batchSent(now, queue.size());
                    longestWait = Math.max(longestWait, now - queue.peekFirst());
                    if (queue.peekFirst() >= 1000) {
                        longestWaitOnceFlowing = Math.max(longestWaitOnceFlowing, now - queue.peekFirst());
                    }
                    if (queue.peekFirst() - lastBatch >= hold) {
                        longestWaitAfterQuiet = Math.max(longestWaitAfterQuiet, now - queue.peekFirst());
                    }
                    changes += queue.size();
                    batches++;
                    queue.clear();
                    lastBatch = now;
                    longestSilence = Math.max(longestSilence, now - lastMessage);
                    lastMessage = now;
                }
                if (OwnerTable.beatDue(now, lastBeat, now - lastBatch, true, BEAT, S, 0)) {
                    beats++;
                    lastBeat = now;
                    longestSilence = Math.max(longestSilence, now - lastMessage);
                    lastMessage = now;
                }
                BatchPacing.NextRound next = sent.nextRound(
                        queue.size(), now, hold, OwnerTable.nextBeatMillis(now, lastBeat, lastBatch, BEAT, S, 0));
                long at = Math.min(next.atMillis(), now + Publisher.MAX_ROUND_MILLIS);
                long more = next.wakeAtQueued() - (long) queue.size(); // changes until the one that wakes it
                if (more >= 1 && more <= arrivals.length - nextArrival) {
                    at = Math.min(at, (long) Math.ceil(arrivals[nextArrival + (int) more - 1]));
                }
                now = Math.max(at, now + 1);
            }
            String at = perSecond + "/s: ";
            assertTrue(
                    rounds <= 2 * batches + beats + seconds * 1000 / Publisher.MAX_ROUND_MILLIS,
                    at + rounds + " rounds for " + batches + " batches and " + beats + " heartbeats in " + seconds
                            + " s");
            assertTrue(longestWait <= hold + Publisher.BATCH_MILLIS, at + "a change waited " + longestWait + " ms");
            assertTrue(
                    longestWaitAfterQuiet <= Publisher.BATCH_MILLIS,
                    at + "a change after a quiet spell waited " + longestWaitAfterQuiet + " ms");
            assertTrue(
                    longestSilence <= BEAT + Publisher.BATCH_MILLIS,
                    at + "the owner was silent for " + longestSilence + " ms");
            double perBatch = (double) changes / batches;
            if (perSecond <= 5) {
                assertTrue(
                        longestWait <= Publisher.BATCH_MILLIS,
                        at + "a change of a light stream waited " + longestWait + " ms");
            }
            if (perSecond >= 50) {
                assertTrue(
                        batches
                                <= seconds * 1000 / hold
                                        + changes / BatchPacing.PAYING_BATCH
                                        + BatchPacing.LIGHT_CHANGES_PER_SECOND
                                        + 1,
                        at + batches + " batches in " + seconds + " s: more than one per hold or paying batch");
            }
            if (perSecond >= 200) {
                assertTrue(perBatch >= 20, at + perBatch + " changes per batch");
                assertTrue(
                        longestWaitOnceFlowing <= BatchPacing.heavyHoldMillis(hold) + Publisher.BATCH_MILLIS,
                        at + "a change of a heavy stream waited " + longestWaitOnceFlowing + " ms");
            }
            if (perSecond >= 500) {
                assertTrue(beats <= seconds, at + beats + " heartbeats in " + seconds + " s");
            }
            if (perSecond >= 2000) {
                assertTrue(
                        longestWait <= BatchPacing.MIN_GAP_MILLIS + Publisher.BATCH_MILLIS,
                        at + "under a heavy stream a change waited " + longestWait + " ms");
            }
            if (perSecond <= 5) {
                assertTrue(beats >= seconds / 4, at + "heartbeats between the batches: " + beats);
            }
        }
    }
}
