package dev.needle.bench;

import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.SplittableRandom;
import java.util.function.LongPredicate;

/**
 * Which partition keys exist and what happened to them. Partitions {@code 0..P-1} are written; a
 * fixed, seeded fraction of them is deleted (by partition delete or row by row, decided per key so
 * both kinds can live in one data set); never-written keys are drawn from a disjoint range. The role
 * of a key depends only on the key and the seed, so a data set that grows keeps its earlier roles.
 */
public final class KeySpace {
    /** How a deleted partition was deleted. */
    public enum DeleteMode {
        PARTITION,
        ROW
    }

    /** Never-written keys are {@code ABSENT_BASE + i}: far above any written key. */
    public static final long ABSENT_BASE = 1L << 48;

    private final long seed;
    private final double deletedFraction;
    private final List<String> deleteModes;

    public KeySpace(long seed, double deletedFraction, List<String> deleteModes) {
        this.seed = seed;
        this.deletedFraction = deletedFraction;
        this.deleteModes = deleteModes;
    }

    /** How partition {@code id} is deleted after the load, or null if it stays live. */
    public DeleteMode deletedBy(long id) {
        if (deleteModes.contains("none") || deletedFraction == 0) {
            return null;
        }
        long h = KeyChooser.mix64(id ^ seed);
        if ((h >>> 11) * 0x1.0p-53 >= deletedFraction) {
            return null;
        }
        boolean partition = deleteModes.contains("partition");
        boolean row = deleteModes.contains("row");
        if (partition && row) {
            return (KeyChooser.mix64(h) & 1) == 0 ? DeleteMode.PARTITION : DeleteMode.ROW;
        }
        return partition ? DeleteMode.PARTITION : DeleteMode.ROW;
    }

    /** The key pools of a data set of {@code partitions} written partitions. */
    public Pools pools(int partitions) {
        long[] live = new long[partitions];
        long[] byPartition = new long[partitions];
        long[] byRow = new long[partitions];
        int l = 0, p = 0, r = 0;
        for (long id = 0; id < partitions; id++) {
            DeleteMode m = deletedBy(id);
            if (m == null) {
                live[l++] = id;
            } else if (m == DeleteMode.PARTITION) {
                byPartition[p++] = id;
            } else {
                byRow[r++] = id;
            }
        }
        long[] absent = new long[partitions];
        for (int i = 0; i < partitions; i++) {
            absent[i] = ABSENT_BASE + i;
        }
        return new Pools(Arrays.copyOf(live, l), Arrays.copyOf(byPartition, p), Arrays.copyOf(byRow, r), absent);
    }

    /**
     * The keys of each pool, ascending (so "zipf-clustered" makes neighbouring keys popular).
     *
     * @param live        written and never deleted
     * @param byPartition deleted by a partition delete
     * @param byRow       deleted row by row (one row tombstone per row)
     * @param absent      never written
     */
    public record Pools(long[] live, long[] byPartition, long[] byRow, long[] absent) {
        /** The pool called {@code name} ("live", "deleted", "absent"); "deleted" means the given mode's pool. */
        public long[] named(String name, DeleteMode deleted) {
            return switch (name) {
                case "live" -> live;
                case "absent" -> absent;
                case "deleted" -> deleted == DeleteMode.ROW ? byRow : byPartition;
                default -> throw new IllegalArgumentException("unknown key pool " + name);
            };
        }

        /** The keys of each pool that {@code keep} accepts, in the same order (e.g. the keys a node does not own). */
        public Pools only(LongPredicate keep) {
            return new Pools(
                    Arrays.stream(live).filter(keep::test).toArray(),
                    Arrays.stream(byPartition).filter(keep::test).toArray(),
                    Arrays.stream(byRow).filter(keep::test).toArray(),
                    Arrays.stream(absent).filter(keep::test).toArray());
        }
    }

    /**
     * Draws lookup keys for one point: a pool by the mix's fractions, then a key within it by the
     * distribution. Immutable; each client thread passes its own random source.
     */
    public static final class LookupKeys {
        private final String[] names;
        private final double[] cumulative;
        private final long[][] pools;
        private final KeyChooser[] choosers;

        public LookupKeys(Pools pools, Map<String, Double> mix, DeleteMode deleted, KeyChooser.Distribution d) {
            List<Map.Entry<String, Double>> parts = mix.entrySet().stream()
                    .filter(e -> e.getValue() > 0)
                    .sorted(Map.Entry.comparingByKey())
                    .toList();
            names = new String[parts.size()];
            cumulative = new double[parts.size()];
            this.pools = new long[parts.size()][];
            choosers = new KeyChooser[parts.size()];
            double c = 0;
            for (int i = 0; i < parts.size(); i++) {
                names[i] = parts.get(i).getKey();
                c += parts.get(i).getValue();
                cumulative[i] = c;
                this.pools[i] = pools.named(names[i], deleted);
                if (this.pools[i].length == 0) {
                    throw new IllegalArgumentException("the '" + names[i]
                            + "' pool is empty: the data set is too small " + "or its deleted fraction is 0");
                }
                choosers[i] = new KeyChooser(d, this.pools[i].length);
            }
            cumulative[cumulative.length - 1] = 1.0;
        }

        /** Index of the pool of the next lookup. */
        public int nextPool(SplittableRandom random) {
            double u = random.nextDouble();
            int i = 0;
            while (u >= cumulative[i]) {
                i++;
            }
            return i;
        }

        /** A key of pool {@code pool}. */
        public long nextKey(int pool, SplittableRandom random) {
            return pools[pool][(int) choosers[pool].next(random)];
        }

        /** Name of pool {@code pool} ("live", "deleted", "absent"). */
        public String poolName(int pool) {
            return names[pool];
        }
    }
}
