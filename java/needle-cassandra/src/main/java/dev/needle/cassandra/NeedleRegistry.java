package dev.needle.cassandra;

import dev.needle.cassandra.storage.StorageFilter;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.cassandra.schema.TableId;

/** The storage filter of each indexed table on this node, where the query handler finds it. */
final class NeedleRegistry {
    private static final ConcurrentHashMap<TableId, StorageFilter> TABLES = new ConcurrentHashMap<>();

    private NeedleRegistry() {}

    static void put(TableId id, StorageFilter state) {
        TABLES.put(id, state);
    }

    static void remove(TableId id, StorageFilter state) {
        TABLES.remove(id, state);
    }

    /** The state of a table, or null when it has no Needle index on this node. */
    static StorageFilter get(TableId id) {
        return TABLES.get(id);
    }
}
