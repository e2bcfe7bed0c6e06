package dev.needle.filter.bench;

import org.fastfilter.bloom.BlockedBloom;
import org.fastfilter.cuckoo.Cuckoo16;
import org.fastfilter.cuckoo.Cuckoo8;

/** fastfilter_java 1.0.2's cuckoo, Bloom and blocked Bloom filters as benchmark {@link Library} rows. */
final class FastFilterLibraries {
    private FastFilterLibraries() {}

    /**
     * fastfilter offers fixed fingerprints: Cuckoo8 (8 bits), Cuckoo16 (16 bits), CuckooPlus8/16
     * (6/14-bit fingerprints plus 2 flag bits in the same 8/16-bit slot). All use 4 slots per
     * bucket and size for load 0.95 (Plus: 0.94). The variant is the smallest slot whose
     * predicted rate 1-(1-2^-f)^(2·4·α) meets the target, the lower rate winning a tie in slot
     * size; when none meets it, the one with the lowest predicted rate (reported as unmet).
     */
    public static String fastFilterCuckooVariant(double fpp) {
        double cuckoo8 = predictedCuckooFpp(8, 0.95);
        return cuckoo8 <= fpp ? "Cuckoo8" : "Cuckoo16";
    }

    static double predictedCuckooFpp(int f, double load) {
        return -Math.expm1(2 * 4 * load * Math.log1p(-Math.pow(2, -f)));
    }

    /** Whether the chosen fastfilter variant's predicted rate meets the target. */
    public static boolean fastFilterCuckooMeetsTarget(double fpp) {
        return predictedCuckooFpp(fastFilterCuckooVariant(fpp).equals("Cuckoo8") ? 8 : 16, 0.95) <= fpp;
    }

    /** What every fastfilter filter shares here: its lookup and its own size API. */
    abstract static class FastFilterLibrary<F extends org.fastfilter.Filter> extends Library {
        F f;

        FastFilterLibrary(int n, double fpp) {
            super(n, fpp);
        }

        @Override
        public boolean contains(long key) {
            return f.mayContain(key);
        }

        @Override
        public Object filter() {
            return f;
        }

        @Override
        public long sizeBits() {
            return f.getBitCount();
        }

        @Override
        public String sizeSource() {
            return "Filter.getBitCount()";
        }
    }

    static final class FastFilterCuckoo extends FastFilterLibrary<org.fastfilter.Filter> {
        final String variant;

        FastFilterCuckoo(int n, double fpp) {
            super(n, fpp);
            variant = fastFilterCuckooVariant(fpp);
        }

        @Override
        public long build(long[] keys) {
            // construct() sizes for load 0.95 and retries with a new seed if an insert fails.
            f = variant.equals("Cuckoo8") ? Cuckoo8.construct(keys) : Cuckoo16.construct(keys);
            return 0;
        }

        @Override
        public Double load() {
            return (double) n / (f.getBitCount() / fingerprintBits());
        }

        @Override
        public Integer fingerprintBits() {
            return variant.equals("Cuckoo8") ? 8 : 16;
        }

        @Override
        public String variant() {
            return "fastfilter " + variant
                    + (fastFilterCuckooMeetsTarget(fpp)
                            ? ""
                            : " (no fastfilter cuckoo variant reaches this rate; closest)");
        }
    }

    static final class FastFilterBloom extends FastFilterLibrary<org.fastfilter.bloom.Bloom> {

        FastFilterBloom(int n, double fpp) {
            super(n, fpp);
        }

        @Override
        public long build(long[] keys) {
            f = org.fastfilter.bloom.Bloom.construct(keys, optimalBloomBitsPerKey(fpp));
            return 0;
        }

        @Override
        public String variant() {
            return String.format("fastfilter Bloom bitsPerKey=%.3f", optimalBloomBitsPerKey(fpp));
        }
    }

    static final class FastFilterBlockedBloom extends FastFilterLibrary<BlockedBloom> {

        FastFilterBlockedBloom(int n, double fpp) {
            super(n, fpp);
        }

        static int bitsPerKey(double fpp) {
            return (int) Math.ceil(optimalBloomBitsPerKey(fpp));
        }

        @Override
        public long build(long[] keys) {
            f = BlockedBloom.construct(keys, bitsPerKey(fpp));
            return 0;
        }

        @Override
        public String variant() {
            return "fastfilter BlockedBloom bitsPerKey=" + bitsPerKey(fpp) + " (int; ceil of the optimal Bloom size)";
        }
    }
}
