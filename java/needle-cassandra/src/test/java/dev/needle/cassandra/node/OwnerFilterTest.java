package dev.needle.cassandra.node;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.HashMap;
import java.util.HashSet;
import java.util.Map;
import java.util.Random;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import org.junit.jupiter.api.Test;

class OwnerFilterTest {

    @Test
    void retractingAnUnpublishedKeyAsksNothingAndQueuesNothing() {
        OwnerFilter owner = new OwnerFilter();
        AtomicInteger asked = new AtomicInteger();
        assertFalse(owner.retract(42, () -> {
            asked.incrementAndGet();
            return false;
        }));
        assertEquals(0, asked.get(), "a key never published needs no lookup");
        assertEquals(null, owner.drain());
    }

    /**
     * A live key beyond the bound is not published: the set says it is full, sends no batch (whose
     * cut time would vouch for the key it lacks) until a new epoch starts empty.
     */
    @Test
    void aLiveKeyBeyondTheBoundMakesTheSetFullUntilTheNextEpoch() {
        OwnerFilter owner = new OwnerFilter(3);
        for (long h = 1; h <= 3; h++) {
            assertTrue(owner.publish(h));
        }
        assertFalse(owner.full());
        assertFalse(owner.publish(4), "no room for a fourth key");
        assertTrue(owner.full());
        assertFalse(owner.isPublished(4));
        assertEquals(null, owner.drain(), "no batch from an incomplete set");
        assertTrue(owner.retract(2, () -> false), "removals stay exact");
        assertEquals(null, owner.drain());
        owner.newEpoch();
        assertFalse(owner.full());
        assertTrue(owner.publish(4));
        assertEquals(1, owner.drain().size());
    }

    @Test
    void retractWithdrawsOnlyWhatIsNoLongerLive() {
        OwnerFilter owner = new OwnerFilter();
        assertTrue(owner.publish(7));
        assertFalse(owner.publish(7), "published once");
        assertFalse(owner.retract(7, () -> true), "still live: stays published");
        assertTrue(owner.isPublished(7));
        assertTrue(owner.retract(7, () -> false));
        assertFalse(owner.isPublished(7));
        OwnerFilter.Batch b = owner.drain();
        assertEquals(2, b.size());
        assertEquals(7, b.hashes()[0]);
        assertFalse(b.removals()[0]);
        assertTrue(b.removals()[1]);
        assertEquals(0, b.seqStart());
        assertEquals(2, b.seqEnd());
    }

    /** The lock-free count always equals the published set, through every kind of change and a new epoch. */
    @Test
    void publishedCountFollowsTheSet() {
        Random rnd = new Random(11);
        OwnerFilter owner = new OwnerFilter();
        Set<Long> model = new HashSet<>();
        Map<Long, Boolean> live = new HashMap<>();
        for (int i = 0; i < 20_000; i++) {
            long k = rnd.nextInt(2_000) * 0x9E3779B97F4A7C15L; // spread over the stripes
            boolean nowLive = rnd.nextBoolean();
            live.put(k, nowLive);
            switch (rnd.nextInt(3)) {
                case 0 -> {
                    owner.publish(k);
                    model.add(k);
                }
                case 1 -> {
                    owner.retract(k, () -> nowLive);
                    if (!nowLive) {
                        model.remove(k);
                    }
                }
                default -> {
                    owner.decide(k, () -> nowLive);
                    if (nowLive) {
                        model.add(k);
                    } else {
                        model.remove(k);
                    }
                }
            }
            assertEquals(model.size(), owner.publishedCount());
            if (i == 10_000) {
                owner.newEpoch();
                model.clear();
                assertEquals(0, owner.publishedCount());
            }
        }
        assertEquals(model.size(), owner.snapshot(false).hashes().length);
    }
}
