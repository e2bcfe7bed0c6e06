package dev.needle.bench;

/**
 * The operations a workload issues against a store. Partitions are identified by a 64-bit key and
 * hold rows numbered from 0; implementations decide the schema. Calls are blocking (the harness runs
 * closed-loop threads) and thread-safe.
 */
public interface Client extends AutoCloseable {
    /** Writes rows {@code first..first+rows-1} of partition {@code key} (batched: as few requests as the store allows). */
    void insert(long key, int first, int rows);

    /** Reads the whole partition; returns the number of rows it holds. */
    int lookup(long key);

    /** Reads rows {@code from..to} (inclusive) of a partition; returns the number found. */
    int range(long key, int from, int to);

    /** Overwrites one row's value. */
    void update(long key, int row);

    /** Deletes a whole partition (one partition tombstone). */
    void deletePartition(long key);

    /** Deletes rows {@code first..first+rows-1} one by one: one row tombstone each, batched. */
    void deleteRows(long key, int first, int rows);

    @Override
    void close();
}
