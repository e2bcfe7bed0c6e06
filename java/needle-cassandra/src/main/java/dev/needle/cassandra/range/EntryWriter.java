package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import org.apache.cassandra.cql3.Attributes;
import org.apache.cassandra.cql3.BatchQueryOptions;
import org.apache.cassandra.cql3.QueryOptions;
import org.apache.cassandra.cql3.VariableSpecifications;
import org.apache.cassandra.cql3.statements.BatchStatement;
import org.apache.cassandra.cql3.statements.ModificationStatement;
import org.apache.cassandra.db.Clustering;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.IMutation;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.service.QueryState;
import org.apache.cassandra.service.StorageProxy;
import org.apache.cassandra.transport.Dispatcher;

/**
 * Writes the index entries of a write before the write itself is sent: the query handler calls
 * {@link #beforeWrite} or {@link #beforeBatch}, which write the entries of the mutations the
 * statement will apply, and sends the statement only when the entries are at (at least) a
 * quorum. So a row value that any replica holds has its entry where a quorum read of the index
 * finds it. An entry whose write then fails or is overwritten is stale,
 * and reads drop it ({@link RangeRead}): no write path has to read before it writes.
 */
public final class EntryWriter {
    /** Entries of TTL'd values outlive them a little, so that no read finds the value without its entry. */
    static final int TTL_MARGIN_SECONDS = 60;
    /** Clusterings are stored serialized in this fixed format (stable across upgrades of the wire version). */
    static final int CLUSTERING_FORMAT = MessagingService.VERSION_40;

    private EntryWriter() {}

    /** Writes the index entries of a write (if it sets an indexed column) before it is sent. */
    public static void beforeWrite(
            ModificationStatement write, QueryState state, QueryOptions options, Dispatcher.RequestTime t) {
        List<RangeIndex> indexes = indexesSetBy(write);
        if (indexes.isEmpty()) {
            return;
        }
        BatchStatement one = new BatchStatement(
                BatchStatement.Type.UNLOGGED, VariableSpecifications.empty(), List.of(write), Attributes.none());
        List<? extends IMutation> mutations = one.getMutations(
                state.getClientState(),
                BatchQueryOptions.withoutPerStatementVariables(options),
                false,
                options.getTimestamp(state),
                options.getNowInSeconds(state),
                t);
        for (RangeIndex index : indexes) {
            write(index, mutations, options.getConsistency(), t);
        }
    }

    /** Writes the index entries of a batch's writes before the batch is sent. */
    public static void beforeBatch(
            BatchStatement batch, QueryState state, BatchQueryOptions options, Dispatcher.RequestTime t) {
        boolean any = false;
        for (ModificationStatement w : batch.getStatements()) {
            any |= !indexesSetBy(w).isEmpty();
        }
        if (!any) {
            return;
        }
        List<? extends IMutation> mutations = batch.getMutations(
                state.getClientState(), options, false, options.getTimestamp(state), options.getNowInSeconds(state), t);
        Set<RangeIndex> seen = new HashSet<>();
        for (ModificationStatement w : batch.getStatements()) {
            for (RangeIndex index : indexesSetBy(w)) {
                if (seen.add(index)) {
                    write(index, mutations, options.getConsistency(), t);
                }
            }
        }
    }

    private static List<RangeIndex> indexesSetBy(ModificationStatement write) {
        List<RangeIndex> all = RangeIndexes.of(write.metadata().id);
        if (all.isEmpty()) {
            return all;
        }
        return all.stream()
                .filter(i -> write.updatedColumns().contains(i.column()))
                .toList();
    }

    /** One entry: the row's primary key under its indexed value, with the value's time and TTL. */
    record Entry(ByteBuffer value, ByteBuffer pk, ByteBuffer ck, long timestamp, int ttl) {}

    /** The entries the base-table updates among {@code mutations} create (values set, not deleted). */
    static List<Entry> entries(RangeIndex index, Collection<? extends IMutation> mutations) {
        List<Entry> out = new ArrayList<>();
        for (IMutation m : mutations) {
            for (PartitionUpdate pu : m.getPartitionUpdates()) {
                if (!pu.metadata().id.equals(index.base().id)) {
                    continue;
                }
                ByteBuffer pk = pu.partitionKey().getKey();
                for (Row row : pu) {
                    Cell<?> cell = row.getCell(index.column());
                    if (cell == null || cell.isTombstone()) {
                        continue;
                    }
                    out.add(new Entry(
                            cell.buffer(), pk, clustering(index, row.clustering()), cell.timestamp(), cell.ttl()));
                }
            }
        }
        return out;
    }

    static ByteBuffer clustering(RangeIndex index, Clustering<?> c) {
        return Clustering.serializer.serialize(
                c, CLUSTERING_FORMAT, index.base().comparator.subtypes());
    }

    /** Writes {@code entries} at the entry level of {@code cl}; returns when they are there (or throws). */
    private static void write(
            RangeIndex index,
            Collection<? extends IMutation> mutations,
            ConsistencyLevel cl,
            Dispatcher.RequestTime t) {
        List<Entry> entries = entries(index, mutations);
        if (entries.isEmpty()) {
            return;
        }
        LeafDirectory<ByteBuffer> d = index.acquire();
        try {
            List<Mutation> out = new ArrayList<>(entries.size());
            for (Entry e : entries) {
                add(index, d, e, out);
            }
            StorageProxy.mutate(out, RangeIndex.entryLevel(cl), t);
        } finally {
            index.release(d);
        }
    }

    /** Adds the mutations of one entry under directory {@code d}: its leaf's, and the old leaf's if it is dual. */
    static void add(RangeIndex index, LeafDirectory<ByteBuffer> d, Entry e, List<Mutation> out) {
        LeafDirectory.Leaf<ByteBuffer> leaf = d.leafFor(e.value());
        out.add(mutation(index, leaf.id(), e));
        index.wrote(leaf.id());
        if (leaf.dual()) {
            out.add(mutation(index, leaf.dualOf(), e)); // nodes that do not know the split read it there
        }
    }

    static Mutation mutation(RangeIndex index, long leaf, Entry e) {
        int ttl = e.ttl() <= 0 ? 0 : (int) Math.min(Attributes.MAX_TTL, (long) e.ttl() + TTL_MARGIN_SECONDS);
        PartitionUpdate.SimpleBuilder b = PartitionUpdate.simpleBuilder(
                        index.tables().entriesTable(), leaf)
                .timestamp(e.timestamp());
        if (ttl > 0) {
            b.ttl(ttl);
        }
        b.row(e.value(), e.pk(), e.ck()).add("live", true);
        return b.buildAsMutation();
    }
}
