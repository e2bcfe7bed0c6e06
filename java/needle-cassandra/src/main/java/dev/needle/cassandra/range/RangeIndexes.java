package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.cql3.QueryProcessor;
import org.apache.cassandra.cql3.UntypedResultSet;
import org.apache.cassandra.db.Clustering;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.marshal.ByteBufferAccessor;
import org.apache.cassandra.db.marshal.CompositeType;
import org.apache.cassandra.exceptions.ConfigurationException;
import org.apache.cassandra.locator.InetAddressAndPort;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.IndexMetadata;
import org.apache.cassandra.schema.TableId;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.StorageProxy;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.transport.Dispatcher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The ordered indexes of this node, by base table, and their background work on one thread:
 * each index's directory refresh (every second), the leaf splits (on one node, every few
 * seconds), and, once after an index is created, the indexing of the rows this node already held.
 */
public final class RangeIndexes {
    private static final Logger logger = LoggerFactory.getLogger(RangeIndexes.class);
    public static final String LEAF_SIZE_OPTION = "leaf_size";
    private static final Map<TableId, List<RangeIndex>> TABLES = new ConcurrentHashMap<>();
    private static final ScheduledExecutorService BACKGROUND = Executors.newScheduledThreadPool(1, r -> {
        Thread t = new Thread(r, "needle-range");
        t.setDaemon(true);
        return t;
    });
    private static volatile boolean started;

    private RangeIndexes() {}

    public static int parseLeafSize(String s) {
        try {
            int n = Integer.parseInt(s.trim());
            if (n >= 16 && n <= 10_000_000) {
                return n;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new ConfigurationException(
                "option " + LEAF_SIZE_OPTION + " must be a number of entries from 16 to 10000000, not '" + s + "'");
    }

    /** Every ordered index on this node. */
    public static List<RangeIndex> all() {
        return TABLES.values().stream().flatMap(List::stream).toList();
    }

    /** The ordered indexes of a table on this node (empty if none). */
    public static List<RangeIndex> of(TableId table) {
        return TABLES.getOrDefault(table, List.of());
    }

    /** Called when Cassandra registers the index on this node (creation, or start-up). */
    public static void register(TableMetadata base, ColumnMetadata column, IndexMetadata metadata) {
        String problem = RangeTables.checkName(metadata.name);
        if (problem != null) {
            logger.error("Needle range index {} on {} is not used: {}", metadata.name, base, problem);
            return;
        }
        String leafSize = metadata.options.get(LEAF_SIZE_OPTION);
        RangeIndex index = new RangeIndex(
                base,
                column,
                metadata.id,
                metadata.name,
                leafSize == null ? RangeIndex.DEFAULT_LEAF_SIZE : parseLeafSize(leafSize));
        TABLES.computeIfAbsent(base.id, id -> new CopyOnWriteArrayList<>()).add(index);
        startBackground();
        BACKGROUND.execute(() -> build(index, 1));
    }

    public static void unregister(TableMetadata base, IndexMetadata metadata) {
        List<RangeIndex> list = TABLES.get(base.id);
        if (list != null) {
            list.removeIf(i -> {
                boolean dropped = i.tables().index().equals(metadata.name);
                if (dropped) {
                    i.plans().release();
                }
                return dropped;
            });
        }
    }

    private static synchronized void startBackground() {
        if (started) {
            return;
        }
        started = true;
        BACKGROUND.scheduleWithFixedDelay(guarded("refresh", RangeIndexes::refreshAll), 1, 1, TimeUnit.SECONDS);
        BACKGROUND.scheduleWithFixedDelay(guarded("leaf split", RangeIndexes::splitAll), 2, 1, TimeUnit.SECONDS);
    }

    /** A periodic task that logs what it throws: an exception would cancel every later run. */
    private static Runnable guarded(String what, Runnable task) {
        return () -> {
            try {
                task.run();
            } catch (RuntimeException e) {
                logger.warn("Needle range indexes: {} failed (retried)", what, e);
            }
        };
    }

    private static void refreshAll() {
        for (List<RangeIndex> list : TABLES.values()) {
            for (RangeIndex index : list) {
                if (!index.tables().exist()) {
                    continue; // the build creates them
                }
                try {
                    index.refresh();
                } catch (RuntimeException e) {
                    index.logRefreshFailure(e);
                }
            }
        }
    }

    private static void splitAll() {
        if (!leader()) {
            return;
        }
        for (List<RangeIndex> list : TABLES.values()) {
            for (RangeIndex index : list) {
                try {
                    if (index.tables().exist() && index.nodes().ready()) {
                        new LeafSplitter(index).step();
                    }
                } catch (RuntimeException e) {
                    logger.warn(
                            "Needle range index {}: leaf split step failed (retried)",
                            index.tables().index(),
                            e);
                }
            }
        }
    }

    /** The node that splits leaves: the live member of the ring with the lowest host id. */
    static boolean leader() {
        UUID lowest = null;
        for (InetAddressAndPort ep : StorageService.instance.getTokenMetadata().getAllEndpoints()) {
            if (!org.apache.cassandra.gms.FailureDetector.instance.isAlive(ep)) {
                continue;
            }
            UUID id = StorageService.instance.getHostIdForEndpoint(ep);
            if (id != null && (lowest == null || id.compareTo(lowest) < 0)) {
                lowest = id;
            }
        }
        return lowest != null && lowest.equals(StorageService.instance.getLocalHostUUID());
    }

    /**
     * Indexes the rows this node holds, once per index: creates the tables if missing, waits
     * until every node has the index and its tables in its schema (then every coordinator writes
     * entries, and every replica can answer for the tables) and for writes sent before that to
     * finish, and writes an entry for each value it holds. Retried after 1, 2, 4 ... up to 30
     * seconds if it fails.
     */
    private static void build(RangeIndex index, int attempt) {
        try {
            index.tables().create();
            long deadline = System.nanoTime() + TimeUnit.MINUTES.toNanos(10);
            while (!schemaAgrees() && System.nanoTime() < deadline) {
                Thread.sleep(500);
            }
            index.ensureTables(); // the directory's first version, now that every replica has its table
            if (index.nodes().builtBefore()) {
                index.nodes().markBuilt();
                return;
            }
            Thread.sleep(DatabaseDescriptor.getWriteRpcTimeout(TimeUnit.MILLISECONDS));
            long rows = indexLocalRows(index);
            index.nodes().markBuilt();
            logger.info(
                    "Needle range index {} on {}: indexed the {} rows this node held",
                    index.tables().index(),
                    index.base(),
                    rows);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException e) {
            long delay = Math.min(30, 1L << Math.min(attempt - 1, 5));
            // Right after CREATE INDEX a replica may not have the index's new tables yet: expected, said briefly.
            if (attempt < 4) {
                logger.info(
                        "Needle range index {} on {}: indexing this node's rows failed ({}); retrying in {} s",
                        index.tables().index(),
                        index.base(),
                        e.toString(),
                        delay);
            } else {
                logger.error(
                        "Needle range index {} on {}: indexing this node's rows failed; retrying in {} s (until then"
                                + " range queries scan)",
                        index.tables().index(),
                        index.base(),
                        delay,
                        e);
            }
            BACKGROUND.schedule(() -> build(index, attempt + 1), delay, TimeUnit.SECONDS);
        }
    }

    private static boolean schemaAgrees() {
        Map<String, List<String>> versions = StorageProxy.describeSchemaVersions(false);
        return versions.keySet().stream()
                        .filter(v -> !v.equals(StorageProxy.UNREACHABLE))
                        .count()
                == 1;
    }

    private static long indexLocalRows(RangeIndex index) {
        TableMetadata base = index.base();
        List<ColumnMetadata> pk = base.partitionKeyColumns();
        List<ColumnMetadata> ck = base.clusteringColumns();
        StringBuilder select = new StringBuilder("SELECT ");
        for (ColumnMetadata c : pk) {
            select.append(c.name.toCQLString()).append(", ");
        }
        for (ColumnMetadata c : ck) {
            select.append(c.name.toCQLString()).append(", ");
        }
        String col = index.column().name.toCQLString();
        select.append(col)
                .append(", WRITETIME(")
                .append(col)
                .append(") AS w, TTL(")
                .append(col)
                .append(") AS t FROM \"")
                .append(base.keyspace)
                .append("\".\"")
                .append(base.name)
                .append('"');
        UntypedResultSet rows = QueryProcessor.executeInternalWithPaging(select.toString(), 1000);
        long n = 0;
        List<EntryWriter.Entry> pending = new ArrayList<>();
        for (UntypedResultSet.Row r : rows) {
            if (!r.has(index.column().name.toString())) {
                continue;
            }
            ByteBuffer[] pkParts = new ByteBuffer[pk.size()];
            for (int i = 0; i < pkParts.length; i++) {
                pkParts[i] = r.getBytes(pk.get(i).name.toString());
            }
            ByteBuffer key =
                    pkParts.length == 1 ? pkParts[0] : CompositeType.build(ByteBufferAccessor.instance, pkParts);
            ByteBuffer[] ckParts = new ByteBuffer[ck.size()];
            for (int i = 0; i < ckParts.length; i++) {
                ckParts[i] = r.getBytes(ck.get(i).name.toString());
            }
            EntryWriter.Entry e = new EntryWriter.Entry(
                    r.getBytes(index.column().name.toString()),
                    key,
                    EntryWriter.clustering(index, Clustering.make(ckParts)),
                    r.getLong("w"),
                    r.has("t") ? r.getInt("t") : 0);
            pending.add(e);
            n++;
            if (pending.size() >= 200) {
                writeEntries(index, pending);
                pending.clear();
            }
        }
        writeEntries(index, pending);
        return n;
    }

    private static void writeEntries(RangeIndex index, List<EntryWriter.Entry> entries) {
        if (entries.isEmpty()) {
            return;
        }
        LeafDirectory<ByteBuffer> d = index.acquire();
        try {
            List<Mutation> out = new ArrayList<>();
            for (EntryWriter.Entry e : entries) {
                EntryWriter.add(index, d, e, out);
            }
            StorageProxy.mutate(out, ConsistencyLevel.QUORUM, Dispatcher.RequestTime.forImmediateExecution());
        } finally {
            index.release(d);
        }
    }
}
