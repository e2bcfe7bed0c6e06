package dev.needle.filter.demo;

import dev.needle.filter.AdaptiveCuckooFilter;
import dev.needle.filter.BloomFilter;
import dev.needle.filter.DeletionAwareCuckooFilter;
import dev.needle.filter.FilterIO;
import dev.needle.filter.Hashing;
import dev.needle.filter.KeyState;
import java.util.Locale;

/**
 * {@code make demo}: the filter family at work on one key set: insert, delete, the three
 * answers, and a side-by-side with a Bloom filter of the same target false-positive rate.
 */
public final class FilterDemo {
    private static final int KEYS = 1_000_000;
    private static final int DELETED = 200_000;
    private static final int ABSENT = 1_000_000;
    private static final double FPP = 0.001;

    private FilterDemo() {}

    public static void main(String[] args) throws Exception {
        Locale.setDefault(Locale.ROOT);
        System.out.printf(
                "Needle filter demo: %,d partition keys, %,d of them then deleted, target false-positive rate %.1f%%%n%n",
                KEYS, DELETED, FPP * 100);

        DeletionAwareCuckooFilter cuckoo = DeletionAwareCuckooFilter.create(KEYS, FPP);
        BloomFilter bloom = BloomFilter.create(KEYS, FPP);
        long t0 = System.nanoTime();
        for (int i = 0; i < KEYS; i++) {
            long h = Hashing.hash("user:" + i);
            cuckoo.insertHash(h);
            bloom.insertHash(h);
        }
        for (int i = 0; i < DELETED; i++) {
            long h = Hashing.hash("user:" + i);
            cuckoo.markDeletedHash(h);
            bloom.markDeletedHash(h); // a Bloom filter cannot record this: the key stays LIVE
        }
        System.out.printf("built both filters in %.1f s%n%n", (System.nanoTime() - t0) / 1e9);

        System.out.println("Three answers of the deletion-aware cuckoo filter:");
        for (String k : new String[] {"user:7", "user:500000", "user:999999", "user:1000001", "user:-1"}) {
            KeyState s = cuckoo.lookupHash(Hashing.hash(k));
            String meaning = switch (s) {
                case LIVE -> "maybe live: read the data";
                case DELETED -> "only tombstones here: skip the read at ONE, read above ONE";
                case ABSENT -> "not here: skip the read";
            };
            System.out.printf("  %-13s -> %-7s (%s)%n", k, s, meaning);
        }
        System.out.println();

        int cuckooSkipsDeleted = 0;
        int bloomSkipsDeleted = 0;
        for (int i = 0; i < DELETED; i++) {
            long h = Hashing.hash("user:" + i);
            cuckooSkipsDeleted += cuckoo.lookupHash(h) != KeyState.LIVE ? 1 : 0;
            bloomSkipsDeleted += bloom.mightContainHash(h) ? 0 : 1;
        }
        int cuckooFp = 0;
        int bloomFp = 0;
        for (int i = 0; i < ABSENT; i++) {
            long h = Hashing.hash("never-written:" + i);
            cuckooFp += cuckoo.lookupHash(h) != KeyState.ABSENT ? 1 : 0;
            bloomFp += bloom.mightContainHash(h) ? 1 : 0;
        }
        int lost = 0;
        int bloomLost = 0;
        for (int i = DELETED; i < KEYS; i++) {
            long h = Hashing.hash("user:" + i);
            lost += cuckoo.lookupHash(h) == KeyState.LIVE ? 0 : 1;
            bloomLost += bloom.mightContainHash(h) ? 0 : 1;
        }

        System.out.println("Side by side, same keys, same target rate:");
        System.out.printf("  %-44s %14s %14s%n", "", "Bloom", "Needle cuckoo");
        System.out.printf(
                "  %-44s %14.2f %14.2f%n",
                "bits per key", bloom.sizeInBytes() * 8.0 / KEYS, cuckoo.sizeInBytes() * 8.0 / KEYS);
        System.out.printf(
                "  %-44s %13.3f%% %13.3f%%%n",
                "false positives on 1M never-written keys", bloomFp * 100.0 / ABSENT, cuckooFp * 100.0 / ABSENT);
        System.out.printf(
                "  %-44s %13.1f%% %13.1f%%%n",
                "reads skipped for deleted keys (at ONE)",
                bloomSkipsDeleted * 100.0 / DELETED,
                cuckooSkipsDeleted * 100.0 / DELETED);
        System.out.printf("  %-44s %14d %14d%n", "live keys reported absent (must be 0)", bloomLost, lost);
        System.out.println("  (the cuckoo filter spends one more bit per slot on the live/deleted state)");
        System.out.println();

        AdaptiveCuckooFilter adaptive = AdaptiveCuckooFilter.create(100_000, 0.01);
        for (int i = 0; i < 100_000; i++) {
            adaptive.insertHash(Hashing.hash("user:" + i));
        }
        int before = 0;
        for (int i = 0; i < 100_000; i++) {
            long q = Hashing.hash("hot-miss:" + i);
            if (adaptive.mightContainHash(q)) {
                before++;
                adaptive.reportFalsePositive(q); // the read found nothing: tell the filter
            }
        }
        int after = 0;
        for (int i = 0; i < 100_000; i++) {
            after += adaptive.mightContainHash(Hashing.hash("hot-miss:" + i)) ? 1 : 0;
        }
        System.out.printf(
                "Adaptive cuckoo filter, the same 100,000 missing keys asked twice: %d false positives, then %d%n",
                before, after);

        byte[] bytes = cuckoo.toByteArray();
        DeletionAwareCuckooFilter copy = (DeletionAwareCuckooFilter) FilterIO.read(bytes);
        System.out.printf(
                "Serialized the cuckoo filter: %,d bytes, checksummed; reloaded copy: %,d live, %,d deleted%n",
                bytes.length, copy.liveCount(), copy.deletedCount());
        if (lost != 0 || bloomLost != 0) {
            throw new AssertionError((lost + bloomLost) + " false negatives");
        }
    }
}
