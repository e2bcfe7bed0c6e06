package dev.needle.cassandra.range;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ArrayBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.Mutation;
import org.apache.cassandra.db.partitions.PartitionUpdate;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.service.StorageProxy;
import org.apache.cassandra.transport.Dispatcher;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Removes the index entries that reads find superseded: the row's indexed column holds another
 * value, written after the entry's (an update moved the row). Writes never read first, so they
 * leave the old entry (docs/range-queries.md, "Why it is exact", promise 2); reads skip it, and
 * this removes it so that reads stop paying for it.
 *
 * <p>An entry is deleted at its own write time, never later: the deletion removes that entry and
 * nothing newer. A value written again for the same row, later, has an entry with a later time,
 * which stays. And a value whose write time is at most the entry's, while the row holds a cell
 * written after it, can never be the row's value again (the later cell wins on every replica), so
 * no read can need the entry: no false negative, whatever the level the row was read at. Best
 * effort and in the background: an entry not removed (a full queue, a failed write) is skipped by
 * reads as before.
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
        if (e.written() == EntryCursor.Position.UNKNOWN_TIME || e.leaf() < 0) {
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
            PartitionUpdate.SimpleBuilder b = PartitionUpdate.simpleBuilder(
                            index.tables().entriesTable(), e.leaf())
                    .timestamp(e.written());
            b.row(e.value(), e.pk(), e.ck()).delete();
            deletes.add(b.buildAsMutation());
        }
        REMOVER.execute(() -> {
            try {
                StorageProxy.mutate(deletes, ConsistencyLevel.ONE, Dispatcher.RequestTime.forImmediateExecution());
                index.plans().staleEntriesRemoved(deletes.size());
            } catch (RuntimeException ex) {
                logger.debug(
                        "Needle range index {}: stale entries not removed: {}",
                        index.tables().index(),
                        ex.toString());
            }
        });
    }
}
