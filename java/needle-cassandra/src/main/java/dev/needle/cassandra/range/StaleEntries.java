package dev.needle.cassandra.range;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.function.IntConsumer;
import org.apache.cassandra.db.Clustering;
import org.apache.cassandra.db.ClusteringComparator;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.ReadExecutionController;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.partitions.UnfilteredPartitionIterator;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.RangeTombstoneMarker;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.Unfiltered;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;
import org.apache.cassandra.locator.AbstractReplicationStrategy;
import org.apache.cassandra.schema.ColumnMetadata;
import org.apache.cassandra.schema.Schema;
import org.apache.cassandra.schema.TableMetadata;
import org.apache.cassandra.service.StorageProxy;
import org.apache.cassandra.transport.Dispatcher;
import org.apache.cassandra.utils.FBUtilities;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes the index entries that reads find stale: superseded (the row's indexed column holds
 * another value, written after the entry's: an update moved the row) or of a deleted row. Writes
 * never read first, so they leave the old entry (docs/range-queries.md, "Why it is exact",
 * promise 2); reads skip it, and this removes it so that reads stop paying for it.
 *
 * <p>A superseded entry is deleted at its own write time, never later: the deletion removes that
 * entry and nothing newer. A value written again for the same row, later, has an entry with a
 * later time, which stays. And a value whose write time is at most the entry's, while the row
 * holds a cell written after it, can never be the row's value again (the later cell wins on every
 * replica), so no read can need the entry: no false negative, whatever the level the row was read
 * at. A deleted row's entry is deleted at the time of the deletion that proves it dead ({@link
 * #removeDeleted}), by the same argument. Best effort and in the background: an entry not removed
 * (a full queue, a failed write, a row this node does not replicate) is skipped by reads as
 * before.
 */
final class StaleEntries {
    private static final Logger logger = LoggerFactory.getLogger(StaleEntries.class);
    /** Batches of removals waiting, at most; more are dropped (the next read finds them again). */
    private static final int QUEUE = 64;

    private static final ThreadPoolExecutor REMOVER = new ThreadPoolExecutor(
            1,
            1,
            0,
            TimeUnit.MILLISECONDS,
            new ArrayBlockingQueue<>(QUEUE),
            r -> {
                Thread t = new Thread(r, "needle-range-stale-entries");
                t.setDaemon(true);
                return t;
            },
            new ThreadPoolExecutor.DiscardPolicy());

    private StaleEntries() {}

    /** Whether {@code row}, as read, proves entry {@code e} superseded: another value, written after it. */
    static boolean superseded(RangeIndex index, Row row, EntryCursor.Position e) {
        if (!removable(e)) {
            return false;
        }
        Cell<?> cell = row.getCell(index.column());
        return cell != null && cell.timestamp() > e.written() && index.compare(cell.buffer(), e.value()) != 0;
    }

    /** Deletes {@code stale} (entries {@link #superseded} said so of), each at its write time, in the background. */
    static void remove(RangeIndex index, List<EntryCursor.Position> stale) {
        if (stale.isEmpty()) {
            return;
        }
        List<Mutation> deletes = new ArrayList<>(stale.size());
        for (EntryCursor.Position e : stale) {
            deletes.add(deletion(index, e, e.written()));
        }
        REMOVER.execute(() -> send(index, deletes, "superseded", index.plans()::staleEntriesRemoved));
    }

    /**
     * Whether entry {@code e} found no live value in its row as read ({@code f}, null if the row
     * was not found): the row may have been deleted since, a proof {@link #removeDeleted} looks for.
     */
    static boolean vanished(RangeIndex index, FetchedRow f, EntryCursor.Position e) {
        return removable(e) && (f == null || f.row().getCell(index.column()) == null);
    }

    /**
     * Deletes, in the background, the entries among {@code vanished} whose rows this node holds
     * deleted at or after the entry's write time. A deletion proves it by its own time: it removes
     * every value of the row written at or before it, on every replica once they have it, so no
     * read can need an entry of such a value. The entry is deleted at that time: an entry written
     * later for the same value and row (the row written again) stays. A read of the row does not
     * show when it was deleted, so the proof is read here, from this node's own data (memtables
     * and SSTables, tombstones included), for the rows this node replicates; the others stay
     * skipped by reads, as before.
     */
    static void removeDeleted(RangeIndex index, List<EntryCursor.Position> vanished) {
        if (vanished.isEmpty()) {
            return;
        }
        REMOVER.execute(() -> {
            List<Mutation> deletes = new ArrayList<>();
            try {
                TableMetadata base = Schema.instance.getTableMetadata(index.base().id); // as altered since
                if (base == null) {
                    return; // dropped
                }
                AbstractReplicationStrategy replication =
                        Keyspace.open(base.keyspace).getReplicationStrategy();
                long now = FBUtilities.nowInSeconds();
                for (EntryCursor.Position e : vanished) {
                    DecoratedKey key = base.partitioner.decorateKey(e.pk());
                    if (replication.getNaturalReplicasForToken(key.getToken()).selfIfPresent() == null) {
                        continue;
                    }
                    long deleted = deletedAt(base, index.column(), key, e.ck(), now);
                    if (deleted >= e.written()) {
                        deletes.add(deletion(index, e, deleted));
                    }
                }
            } catch (RuntimeException ex) { // the table dropped meanwhile, a read that failed
                logger.debug(
                        "Needle range index {}: deleted rows not checked: {}",
                        index.tables().index(),
                        ex.toString());
            }
            send(index, deletes, "deleted rows'", index.plans()::deletedEntriesRemoved);
        });
    }

    /**
     * The time of the latest deletion this node holds of row ({@code key}, {@code ck})'s value of
     * {@code column} (partition, range or row deletion, or the cell's tombstone); {@link Long#MIN_VALUE}
     * if none, or if the value is there (live, or expiring: its entry expires too).
     */
    static long deletedAt(TableMetadata base, ColumnMetadata column, DecoratedKey key, ByteBuffer ck, long now) {
        ClusteringComparator order = base.comparator;
        Clustering<?> clustering =
                Clustering.serializer.deserialize(ck, EntryWriter.CLUSTERING_FORMAT, order.subtypes());
        SinglePartitionReadCommand read = SinglePartitionReadCommand.create(base, now, key, clustering);
        try (ReadExecutionController ec = read.executionController();
                UnfilteredPartitionIterator partitions = read.executeLocally(ec)) {
            if (!partitions.hasNext()) {
                return Long.MIN_VALUE;
            }
            try (UnfilteredRowIterator p = partitions.next()) {
                long deleted = p.partitionLevelDeletion().markedForDeleteAt();
                DeletionTime open = DeletionTime.LIVE; // the range deletion open at the row's place
                while (p.hasNext()) {
                    Unfiltered u = p.next();
                    int c = order.compare(u.clustering(), clustering);
                    if (c > 0) {
                        break;
                    }
                    if (u.isRangeTombstoneMarker()) {
                        RangeTombstoneMarker m = (RangeTombstoneMarker) u;
                        open = m.isOpen(false) ? m.openDeletionTime(false) : DeletionTime.LIVE;
                    } else if (c == 0) {
                        Row row = (Row) u;
                        Cell<?> cell = row.getCell(column);
                        if (cell != null && !cell.isTombstone()) {
                            return Long.MIN_VALUE;
                        }
                        deleted = Math.max(deleted, row.deletion().time().markedForDeleteAt());
                        if (cell != null) {
                            deleted = Math.max(deleted, cell.timestamp());
                        }
                    }
                }
                return Math.max(deleted, open.markedForDeleteAt());
            }
        }
    }

    /** Whether {@code e} was read from a leaf with its write time, which a removal needs. */
    private static boolean removable(EntryCursor.Position e) {
        return e.written() != EntryCursor.Position.UNKNOWN_TIME && e.leaf() >= 0;
    }

    /** The deletion of entry {@code e} at time {@code at}, in the leaf it was read from. */
    private static Mutation deletion(RangeIndex index, EntryCursor.Position e, long at) {
        PartitionUpdate.SimpleBuilder b = PartitionUpdate.simpleBuilder(
                        index.tables().entriesTable(), e.leaf())
                .timestamp(at);
        b.row(e.value(), e.pk(), e.ck()).delete();
        return b.buildAsMutation();
    }

    private static void send(RangeIndex index, List<Mutation> deletes, String what, IntConsumer counted) {
        if (deletes.isEmpty()) {
            return;
        }
        try {
            StorageProxy.mutate(deletes, ConsistencyLevel.ONE, Dispatcher.RequestTime.forImmediateExecution());
            counted.accept(deletes.size());
        } catch (RuntimeException ex) {
            logger.debug(
                    "Needle range index {}: {} entries not removed: {}",
                    index.tables().index(),
                    what,
                    ex.toString());
        }
    }
}
