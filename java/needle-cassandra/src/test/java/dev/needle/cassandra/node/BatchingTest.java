package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.ArrayDeque;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

/** When an owner sends its queued changes ({@link OwnerTable#batchDue}) and its heartbeats ({@link OwnerTable#beatDue}). */
class BatchingTest {
    private static final long S = 1000;
    private static final long BEAT = OwnerTable.beatIntervalMillis(S);

    @Test
    void theHoldIsATwentiethOfTheStalenessBoundWithinItsLimits() {
        assertEquals(50, OwnerTable.holdMillis(1000));
        assertEquals(25, OwnerTable.holdMillis(500));
        assertEquals(Publisher.BATCH_MILLIS, OwnerTable.holdMillis(60));
        assertEquals(OwnerTable.MAX_HOLD_MILLIS, OwnerTable.holdMillis(3_600_000));
        assertEquals(500, OwnerTable.beatIntervalMillis(1000));
    }

    @Test
    void aChangeAfterAQuietSpellGoesAtOnce() {
        assertTrue(OwnerTable.batchDue(1, 50, false, 50));
        assertTrue(OwnerTable.batchDue(1, 5_000, false, 50));
    }

    @Test
    void streamingChangesWaitForAFullBatchTheHoldOrAHeartbeat() {
        assertFalse(OwnerTable.batchDue(1, 5, false, 50));
        assertFalse(OwnerTable.batchDue(OwnerTable.FULL_BATCH - 1, 49, false, 50));
        assertTrue(OwnerTable.batchDue(OwnerTable.FULL_BATCH, 0, false, 50), "a full batch");
        assertTrue(OwnerTable.batchDue(1, 5, true, 50), "before a heartbeat");
        assertFalse(OwnerTable.batchDue(0, 5_000, true, 50), "nothing to send");
    }

    @Test
    void whileBatchesFlowAHeartbeatThatSaysNothingNewWaitsUpToHalfTheBound() {
        assertFalse(OwnerTable.beatDue(BEAT - 1, 10_000, true, BEAT, S), "not before its interval");
        assertTrue(OwnerTable.beatDue(BEAT, 10_000, true, BEAT, S), "no batches: at its interval");
        assertFalse(OwnerTable.beatDue(BEAT, 20, true, BEAT, S), "a batch went out lately");
        assertFalse(OwnerTable.beatDue(2 * S - 1, 20, true, BEAT, S));
        assertTrue(OwnerTable.beatDue(2 * S, 20, true, BEAT, S), "at least every 2S");
        assertTrue(OwnerTable.beatDue(BEAT, 20, false, BEAT, S), "another epoch or claim: at its interval");
    }

    /**
     * The publisher's loop over random streams of changes (Poisson arrivals at rates from 5 to
     * 5,000 a second, rounds every 5 ms): no change waits longer than the hold plus a round, the
     * owner is never silent for more than S/2 (a copy stays fresh), batches fill under load, and
     * heartbeats then almost stop.
     */
    @Test
    void noChangeWaitsLongerThanTheHoldPlusARoundAndMessagesThinOutUnderLoad() {
        long hold = OwnerTable.holdMillis(S);
        for (double perSecond : new double[] {5, 50, 200, 500, 2000, 5000}) {
            SplittableRandom r = new SplittableRandom((long) perSecond);
            ArrayDeque<Double> queue = new ArrayDeque<>(); // arrival times of queued changes
            double nextArrival = 0;
            long lastBatch = -1_000, lastBeat = 0, lastMessage = 0;
            long batches = 0, beats = 0, changes = 0;
            double longestWait = 0;
            long longestSilence = 0;
            long seconds = 60;
            for (long now = 0; now < seconds * 1000; now += Publisher.BATCH_MILLIS) {
                while (nextArrival <= now) {
                    queue.add(nextArrival);
                    nextArrival += -Math.log(1 - r.nextDouble()) * 1000 / perSecond;
                }
                boolean beatDue = OwnerTable.beatDue(now - lastBeat, now - lastBatch, true, BEAT, S);
                if (OwnerTable.batchDue(queue.size(), now - lastBatch, beatDue, hold)) {
                    longestWait = Math.max(longestWait, now - queue.peekFirst());
                    changes += queue.size();
                    batches++;
                    queue.clear();
                    lastBatch = now;
                    longestSilence = Math.max(longestSilence, now - lastMessage);
                    lastMessage = now;
                }
                if (OwnerTable.beatDue(now - lastBeat, now - lastBatch, true, BEAT, S)) {
                    beats++;
                    lastBeat = now;
                    longestSilence = Math.max(longestSilence, now - lastMessage);
                    lastMessage = now;
                }
            }
            String at = perSecond + "/s: ";
            assertTrue(longestWait <= hold + Publisher.BATCH_MILLIS, at + "a change waited " + longestWait + " ms");
            assertTrue(longestSilence <= BEAT, at + "the owner was silent for " + longestSilence + " ms");
            double perBatch = (double) changes / batches;
            if (perSecond >= 500) {
                assertTrue(perBatch >= 20, at + perBatch + " changes per batch");
                assertTrue(beats <= seconds, at + beats + " heartbeats in " + seconds + " s");
            }
            if (perSecond <= 5) {
                assertTrue(perBatch < 1.1, at + "changes after a quiet spell went alone: " + perBatch);
                assertTrue(beats >= seconds / 4, at + "heartbeats between the batches: " + beats);
            }
        }
    }
}
