package dev.needle.filter;

import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;

/**
 * What every filter of the family reports about itself, and how it is saved.
 *
 * <p><b>Concurrency model</b> (all implementations): any number of threads may read
 * (lookups, statistics, serialization) while writers mutate; writers are serialized
 * by the filter's own lock. Reads take no lock: they read optimistically and retry
 * under a read lock only when a write overlapped them, so a lookup never observes a
 * fingerprint in flight between two buckets. A key whose insert has returned is seen
 * by every lookup that starts afterwards.
 */
public interface Filter {
    /** The kind, as recorded in the serialized format. */
    FilterKind kind();

    /** Number of entries held (for three-state filters: live plus deleted entries). */
    long count();

    /** Number of entries the filter can hold (cuckoo: slots; Bloom: its design key count). */
    long capacity();

    /** {@code count() / capacity()}. */
    default double load() {
        return capacity() == 0 ? 0 : (double) count() / capacity();
    }

    /** Bytes of the in-memory filter proper (for the adaptive filter, its key store is not included). */
    long sizeInBytes();

    /** The false-positive rate that theory predicts at the current load. */
    double expectedFalsePositiveRate();

    /** Writes the filter in the versioned, checksummed format of {@code format/filter-v1.md}. */
    void writeTo(OutputStream out) throws IOException;

    /** The serialized form as a byte array. */
    default byte[] toByteArray() {
        ByteArrayOutputStream out =
                new ByteArrayOutputStream((int) Math.min(Integer.MAX_VALUE - 64, sizeInBytes() + 128));
        try {
            writeTo(out);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return out.toByteArray();
    }
}
