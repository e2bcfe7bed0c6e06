package dev.needle.cassandra.storage;

import java.util.Collection;
import java.util.List;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.cassandra.schema.TableId;

/**
 * The storage filter of each table with a Needle index on this node: where the query handler finds
 * it for a read, and the virtual tables list them. An index puts its filter here when Cassandra
 * registers it and removes it when it goes.
 */
public final class FilterRegistry {
    private static final ConcurrentHashMap<TableId, StorageFilter> TABLES = new ConcurrentHashMap<>();

    private FilterRegistry() {}

    /** Registers the storage filter of table {@code id} (its index was registered). */
    public static void put(TableId id, StorageFilter filter) {
        TABLES.put(id, filter);
    }

    /** Removes {@code filter} of table {@code id}, if it is still the one registered. */
    public static void remove(TableId id, StorageFilter filter) {
        TABLES.remove(id, filter);
    }

    /** Every table's storage filter on this node. */
    public static Collection<StorageFilter> all() {
        return List.copyOf(TABLES.values());
    }

    /** The storage filter of a table, or null when it has no Needle index on this node. */
    public static StorageFilter get(TableId id) {
        return TABLES.get(id);
    }
}
