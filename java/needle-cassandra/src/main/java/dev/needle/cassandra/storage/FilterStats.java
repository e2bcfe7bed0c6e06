package dev.needle.cassandra.storage;

/** One table's storage-filter numbers at one moment ({@link StorageFilter#stats}), for metrics and the virtual table. */
public record FilterStats(
        boolean ready,
        long filterBytes,
        long liveKeys,
        long deletedKeys,
        long memtableKeys,
        long partitionTombstones,
        long provenDeadKeys,
        long sstablesWithFilter,
        long sstablesWithoutFilter,
        long untrackedMemtables) {}
