package dev.needle.filter;

/** The kinds of filter, with the code each has in the serialized format. */
public enum FilterKind {
    /** {@link CuckooFilter}. */
    CUCKOO(1),
    /** {@link DeletionAwareCuckooFilter}: three-state answers. */
    DELETION_AWARE_CUCKOO(2),
    /** {@link AdaptiveCuckooFilter}: removes false positives, keeps its keys' hashes. */
    ADAPTIVE_CUCKOO(3),
    /** {@link BloomFilter}: the baseline; cannot remove keys. */
    BLOOM(4);

    /** Code in byte 6 of a serialized filter. */
    public final int code;

    FilterKind(int code) {
        this.code = code;
    }

    static FilterKind ofCode(int code) {
        for (FilterKind k : values()) {
            if (k.code == code) {
                return k;
            }
        }
        return null;
    }
}
