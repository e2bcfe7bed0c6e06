package dev.needle.cassandra.range;

import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.UUID;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.SchemaConstants;
import org.apache.cassandra.schema.TableMetadata;

/**
 * The tables behind one ordered index, in the base table's keyspace (so with its replication):
 *
 * <ul>
 *   <li>{@code needle_rx_<index>}: the entries, one partition per leaf, ordered by the indexed
 *       value and then the row's primary key (partition key bytes and serialized clustering);
 *       {@code live} carries the entry's TTL (so a leaf split copies it);
 *   <li>{@code needle_rx_<index>_dir}: the leaf directory, one partition changed only by
 *       lightweight transactions (its static {@code version} is the condition);
 *   <li>{@code needle_rx_<index>_nodes}: per index instance (a dropped and re-created index is
 *       another) and node, the oldest directory version it acts on and whether
 *       it has indexed the rows it held when the index was created;
 *   <li>{@code needle_rx_<index>_counts}: entries written per leaf, as counters (approximate: a
 *       rewrite of an entry counts again), which tell the splitter which leaves to count.
 * </ul>
 *
 * Table ids are derived from the names, so nodes that create them at once agree.
 */
public record RangeTables(String keyspace, String index, String valueType) {
    static final String PREFIX = "needle_rx_";

    public String entries() {
        return PREFIX + index;
    }

    public String directory() {
        return PREFIX + index + "_dir";
    }

    public String nodes() {
        return PREFIX + index + "_nodes";
    }

    public String counts() {
        return PREFIX + index + "_counts";
    }

    /** The qualified name of one of this index's tables, quoted for CQL. */
    public String q(String table) {
        return '"' + keyspace + "\".\"" + table + '"';
    }

    /** Whether an index of this name can have its tables (Cassandra limits names' lengths). */
    public static String checkName(String index) {
        String longest = PREFIX + index + "_counts";
        if (longest.length() > SchemaConstants.TABLE_NAME_LENGTH) {
            return "the index name '" + index + "' is too long for its tables (" + longest + " has more than "
                    + SchemaConstants.TABLE_NAME_LENGTH + " characters): choose a name of at most "
                    + (SchemaConstants.TABLE_NAME_LENGTH - PREFIX.length() - "_counts".length()) + " characters";
        }
        return null;
    }

    private String id(String table) {
        return UUID.nameUUIDFromBytes((keyspace + "." + table).getBytes(StandardCharsets.UTF_8))
                .toString();
    }

    /** How long the entries' tombstones are kept: Cassandra's default hint window. */
    static final int ENTRY_GC_GRACE_SECONDS = 3 * 3600;

    /** The CQL that creates the tables (idempotent). */
    public List<String> schema() {
        return List.of(
                "CREATE TABLE IF NOT EXISTS " + q(entries()) + " (leaf bigint, value " + valueType
                        + ", pk blob, ck blob, live boolean, PRIMARY KEY ((leaf), value, pk, ck)) WITH ID = "
                        + id(entries())
                        // a deleted entry that comes back is only stale (reads check every row),
                        // so its tombstones need not outlive the hint window (3 h by default);
                        // reads that remove stale entries leave many, which leaves scan over
                        + " AND gc_grace_seconds = " + ENTRY_GC_GRACE_SECONDS
                        + " AND comment = 'Needle ordered index entries (do not write)'",
                "CREATE TABLE IF NOT EXISTS " + q(directory()) + " (part int, version bigint static, leaf bigint,"
                        + " lower blob, state text, old_leaf bigint, entry_count bigint, counted_at bigint,"
                        + " PRIMARY KEY ((part), leaf)) WITH ID = " + id(directory())
                        + " AND comment = 'Needle ordered index leaf directory (do not write)'",
                "CREATE TABLE IF NOT EXISTS " + q(nodes()) + " (index_id uuid, node uuid, version bigint,"
                        + " built boolean, PRIMARY KEY ((index_id), node)) WITH ID = " + id(nodes())
                        + " AND comment = 'Needle ordered index node status (do not write)'",
                "CREATE TABLE IF NOT EXISTS " + q(counts()) + " (leaf bigint PRIMARY KEY, written counter) WITH ID = "
                        + id(counts()) + " AND comment = 'Needle ordered index leaf counters (do not write)'");
    }

    /** Whether all four tables exist on this node. */
    public boolean exist() {
        for (String t : List.of(entries(), directory(), nodes(), counts())) {
            if (Schema.instance.getTableMetadata(keyspace, t) == null) {
                return false;
            }
        }
        return true;
    }

    /** Creates what is missing (a schema change, agreed by the cluster as any other). */
    public void create() {
        if (!exist()) {
            for (String cql : schema()) {
                QueryProcessor.process(cql, ConsistencyLevel.ONE);
            }
        }
    }

    public TableMetadata entriesTable() {
        return Schema.instance.getTableMetadata(keyspace, entries());
    }
}
