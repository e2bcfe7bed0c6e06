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
        long untrackedMemtables) {

    /** The numbers of one TableSources, with {@code provenDeadKeys} from the feedback. */
    static FilterStats of(TableSources v, long provenDeadKeys) {
        long bytes = 0, live = 0, deleted = 0, tombstones = 0, memKeys = 0;
        for (SSTableKeys k : v.sstableArray()) {
            bytes += k.filter.sizeInBytes();
            live += k.filter.liveCount();
            deleted += k.filter.deletedCount();
            tombstones += k.tombstones.size();
        }
        for (MemtableKeys m : v.memtables) {
            memKeys += m.size();
        }
        return new FilterStats(
                v.ready(),
                bytes,
                live,
                deleted,
                memKeys,
                tombstones,
                provenDeadKeys,
                v.sstables.size(),
                v.unknown.size(),
                v.untracked.size());
    }
}
