package dev.needle.cassandra;

import java.util.concurrent.ConcurrentHashMap;
import org.apache.cassandra.schema.TableId;

/** The Needle state of each indexed table on this node, where the query handler finds it. */
final class NeedleRegistry {
    private static final ConcurrentHashMap<TableId, TableKeyState> TABLES = new ConcurrentHashMap<>();

    private NeedleRegistry() {}

    static void put(TableId id, TableKeyState state) {
        TABLES.put(id, state);
    }

    static void remove(TableId id, TableKeyState state) {
        TABLES.remove(id, state);
    }

    /** The state of a table, or null when it has no Needle index on this node. */
    static TableKeyState get(TableId id) {
        return TABLES.get(id);
    }
}
