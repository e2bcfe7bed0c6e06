package dev.needle.bench;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * One of the tables an experiment measures side by side, all in one keyspace with the same schema
 * and the same data: stock Cassandra (no index), and Needle with a Bloom or a cuckoo filter.
 *
 * @param name  the name used in experiments and results
 * @param table the table's name
 * @param filter the Needle index's 'filter' option, or null for stock Cassandra
 */
public record Variant(String name, String table, String filter) {
    /** Every variant an experiment may name. */
    public static final List<String> NAMES = List.of("stock", "needle-bloom", "needle-cuckoo");

    /** The variant called {@code name}. */
    public static Variant of(String name) {
        return switch (name) {
            case "stock" -> new Variant(name, "stock", null);
            case "needle-bloom" -> new Variant(name, "needle_bloom", "bloom");
            case "needle-cuckoo" -> new Variant(name, "needle_cuckoo", "cuckoo");
            default -> throw new IllegalArgumentException("variant '" + name + "' is not one of " + NAMES);
        };
    }

    /** Whether the table carries the Needle index. */
    public boolean needle() {
        return filter != null;
    }

    /**
     * The CQL that creates this variant's table (and index) in {@code keyspace}; {@code options} are
     * added to the index's own (null: none).
     */
    public List<String> ddl(String keyspace, Map<String, String> options) {
        String t = keyspace + "." + table;
        String create = "CREATE TABLE " + t + " (pk bigint, ck int, v blob, PRIMARY KEY (pk, ck))";
        if (!needle()) {
            return List.of(create);
        }
        Map<String, String> all = new LinkedHashMap<>();
        all.put("filter", filter);
        if (options != null) {
            all.putAll(options);
        }
        String with = all.entrySet().stream()
                .map(e -> quote(e.getKey()) + ": " + quote(e.getValue()))
                .collect(Collectors.joining(", "));
        return List.of(
                create,
                "CREATE CUSTOM INDEX " + table + "_needle ON " + t
                        + " () USING 'dev.needle.cassandra.NeedleIndex' WITH OPTIONS = {" + with + "}");
    }

    private static String quote(String s) {
        return "'" + s.replace("'", "''") + "'";
    }
}
