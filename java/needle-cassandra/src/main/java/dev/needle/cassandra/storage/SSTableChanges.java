package dev.needle.cassandra.storage;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.EnumSet;
import java.util.HashMap;
import java.util.HashSet;
import java.util.IdentityHashMap;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.TimeUnit;
import java.util.function.Function;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.compaction.OperationType;
import org.apache.cassandra.db.lifecycle.LifecycleNewTracker;
import org.apache.cassandra.db.lifecycle.LifecycleTransaction;
import org.apache.cassandra.db.lifecycle.View;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.SSTableFlushObserver;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.notifications.INotification;
import org.apache.cassandra.notifications.INotificationConsumer;
import org.apache.cassandra.notifications.InitialSSTableAddedNotification;
import org.apache.cassandra.notifications.MemtableDiscardedNotification;
import org.apache.cassandra.notifications.SSTableAddedNotification;
import org.apache.cassandra.notifications.SSTableListChangedNotification;
import org.apache.cassandra.notifications.TruncationNotification;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.NoSpamLogger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How the table's set of SSTables and memtables changes, as Cassandra's tracker reports it, and
 * what Needle knows of each SSTable when it goes live.
 *
 * <p>A notification is applied by its <em>net</em> change, by SSTable (descriptor): the same
 * SSTable in the removed and the added list is a new reader of the same files (index-summary
 * redistribution, a compaction's restored originals after an abort, a moved start) and changes
 * nothing Needle knows. Only SSTables that truly leave are dropped, and only those that truly
 * arrive are added, with the keys an observer collected while they were written, the file a
 * build saved before they went live, or else a scan.
 */
final class SSTableChanges implements INotificationConsumer {
    private static final Logger logger = LoggerFactory.getLogger(SSTableChanges.class);
    private static final NoSpamLogger noSpam = NoSpamLogger.getLogger(logger, 1, TimeUnit.MINUTES);
    /** Operations that rewrite SSTables this node already has: their outputs inherit the inputs' partition deletions. */
    private static final EnumSet<OperationType> REWRITES = EnumSet.of(
            OperationType.COMPACTION,
            OperationType.MAJOR_COMPACTION,
            OperationType.TOMBSTONE_COMPACTION,
            OperationType.GARBAGE_COLLECT,
            OperationType.CLEANUP,
            OperationType.SCRUB,
            OperationType.UPGRADE_SSTABLES,
            OperationType.RELOCATE,
            OperationType.ANTICOMPACTION);
    /** Tombstones within this margin of purgeability are not inherited: forgetting a deletion is always safe. */
    private static final long PURGE_MARGIN_SECONDS = 3600;
    /** Arrivals whose SSTable never went live (a failed flush or stream) are forgotten after this long. */
    private static final long ARRIVAL_TTL_NANOS = TimeUnit.HOURS.toNanos(1);

    private final StorageFilter filter;
    private final ColumnFamilyStore cfs;

    /** What is known of SSTables that are not live yet: observed while written, or built before an import. */
    private final ConcurrentHashMap<Descriptor, Arrival> arriving = new ConcurrentHashMap<>();

    private record Arrival(SSTableKeys keys, boolean saved, long since) {}

    SSTableChanges(StorageFilter filter) {
        this.filter = filter;
        this.cfs = filter.cfs;
    }

    // ---- SSTables being written ------------------------------------------------------------

    /** An observer for an SSTable being written; its source decides what it knows of partition deletions. */
    SSTableFlushObserver observer(Descriptor descriptor, LifecycleNewTracker tracker) {
        OperationType op = tracker.opType();
        long nowInSec = FBUtilities.nowInSeconds();
        TableSources sources = filter.sources();
        if (op == OperationType.FLUSH) {
            List<MemtableKeys> flushing = new ArrayList<>();
            boolean complete = true;
            View tv = cfs.getTracker().getView();
            for (Memtable m : tv.flushingMemtables) {
                if (m.getFlushTransaction() != null && m.getFlushTransaction() != tracker) {
                    continue; // another flush
                }
                MemtableKeys mk = sources.keysOf(m);
                complete &= !sources.untracked.contains(m) && mk != null;
                if (mk != null) {
                    flushing.add(mk);
                }
            }
            return new KeySetObserver(
                    filter, descriptor, key -> flushedTombstone(flushing, key), complete, nowInSec, false);
        }
        if (REWRITES.contains(op)
                && tracker instanceof LifecycleTransaction txn
                && !txn.originals().isEmpty()) {
            Map<ByteBuffer, Tombstone> inherited = new HashMap<>();
            boolean complete = true;
            long keepAfter = nowInSec - cfs.metadata().params.gcGraceSeconds + PURGE_MARGIN_SECONDS;
            for (SSTableReader r : txn.originals()) {
                SSTableKeys k = sources.sstables.get(r.descriptor);
                if (k == null) {
                    complete = false;
                    continue;
                }
                complete &= k.tombstonesComplete;
                k.tombstones.forEach((key, t) -> {
                    if (t.localDeletionTime() >= keepAfter) {
                        inherited.merge(key, t, Tombstone::max);
                    }
                });
            }
            return new KeySetObserver(filter, descriptor, inherited::get, complete, nowInSec, false);
        }
        // Streaming and anything else: the rows are seen, the partition deletions are not.
        Function<ByteBuffer, Tombstone> none = key -> null;
        return new KeySetObserver(filter, descriptor, none, false, nowInSec, true);
    }

    /**
     * The partition deletion a flushed SSTable holds for a key, from the flushing memtables' key
     * sets. Should several flushing memtables hold the key (the flush could not be told apart),
     * the oldest deletion is taken, or none if one of them has none: erring low is safe.
     */
    private static Tombstone flushedTombstone(List<MemtableKeys> flushing, ByteBuffer key) {
        Tombstone chosen = null;
        boolean first = true;
        for (MemtableKeys mk : flushing) {
            MemtableKeys.Entry e = mk.get(key);
            if (e != null) {
                Tombstone t = e.tombstone();
                if (first || chosen != null && (t == null || t.markedForDeleteAt() < chosen.markedForDeleteAt())) {
                    chosen = t;
                }
                first = false;
            }
        }
        return chosen;
    }

    void observed(Descriptor d, SSTableKeys keys) {
        arriving.put(d, new Arrival(keys, false, System.nanoTime()));
    }

    void forgetArrival(Descriptor d) {
        arriving.remove(d);
    }

    /** Keys built or loaded for an SSTable before it goes live (import, whole-SSTable streaming). */
    void prepared(Descriptor d, SSTableKeys keys, boolean saved) {
        arriving.put(d, new Arrival(keys, saved, System.nanoTime()));
    }

    boolean isPrepared(Descriptor d) {
        return arriving.containsKey(d);
    }

    // ---- the tracker's notifications ---------------------------------------------------------

    @Override
    public void handleNotification(INotification notification, Object sender) {
        logger.trace(
                "Needle {}: {}", filter.qualifiedName(), notification.getClass().getSimpleName());
        try {
            if (notification instanceof SSTableAddedNotification
                    || notification instanceof SSTableListChangedNotification) {
                Faults.hit("notification");
            }
            if (notification instanceof SSTableAddedNotification added) {
                Memtable m = added.memtable().orElse(null);
                apply(List.of(), added.added, m, m == null);
            } else if (notification instanceof InitialSSTableAddedNotification initial) {
                apply(List.of(), initial.added, null, true);
            } else if (notification instanceof SSTableListChangedNotification changed) {
                apply(changed.removed, changed.added, null, false);
            } else if (notification instanceof MemtableDiscardedNotification discarded) {
                filter.update(e -> e.removeMemtable(discarded.memtable));
            } else if (notification instanceof TruncationNotification) {
                truncated();
            }
        } catch (Throwable t) {
            changeFailed(notification, t);
        }
    }

    /**
     * Applies the net change of one notification: SSTables removed and not added again leave;
     * SSTables added and not removed arrive; SSTables in both are new readers of the same files.
     *
     * @param flushed the memtable whose data the added SSTables now hold, or null
     * @param fromOutside the SSTables hold data that did not pass this node's write path
     */
    private void apply(
            Collection<SSTableReader> removed, Iterable<SSTableReader> added, Memtable flushed, boolean fromOutside) {
        Map<Descriptor, SSTableReader> in = new LinkedHashMap<>();
        for (SSTableReader r : added) {
            in.put(r.descriptor, r);
        }
        Set<Descriptor> out = new LinkedHashSet<>();
        for (SSTableReader r : removed) {
            out.add(r.descriptor);
        }
        if (logger.isDebugEnabled()) {
            logger.debug(
                    "Needle {}: SSTables out {}, in {}{}",
                    filter.qualifiedName(),
                    out,
                    in.keySet(),
                    flushed == null ? "" : " (flush)");
        }
        List<Descriptor> toScan = new ArrayList<>();
        Map<SSTableReader, SSTableKeys> toSave = new IdentityHashMap<>();
        boolean[] arrived = {false};
        filter.update(e -> {
            for (Descriptor d : out) {
                if (!in.containsKey(d)) {
                    e.removeSSTable(d);
                }
            }
            for (Map.Entry<Descriptor, SSTableReader> a : in.entrySet()) {
                Descriptor d = a.getKey();
                if (out.contains(d) && e.has(d)) {
                    if (e.isUnknown(d)) {
                        toScan.add(d); // a scan may have been deferred while its start was moved
                    }
                    continue; // a new reader of an SSTable already known: nothing changes
                }
                arrived[0] = true;
                Arrival arrival = arriving.remove(d);
                if (arrival != null) {
                    SSTableKeys keys = arrival.keys.forReader(a.getValue());
                    e.putSSTable(d, keys);
                    if (!arrival.saved) {
                        toSave.put(a.getValue(), keys);
                    }
                    if (!keys.tombstonesComplete) {
                        toScan.add(d);
                    }
                } else {
                    e.markUnknown(d);
                    toScan.add(d);
                }
            }
            if (flushed != null) {
                e.removeMemtable(flushed);
            }
        });
        if (fromOutside && arrived[0]) {
            filter.feedback.newEpoch();
        }
        pruneArrivals();
        toSave.forEach(filter.saved::save);
        filter.scans.retryDeferred();
        filter.scans.enqueue(toScan);
    }

    /**
     * TRUNCATE: Cassandra removes the SSTables with their own notification; here the memtables it
     * dropped without a flush (a keyspace without durable writes) go, with whatever deletions they
     * held. They are exactly those no longer in the tracker's view: the truncation waited for
     * their writes and for the dump.
     */
    private void truncated() {
        View tv = cfs.getTracker().getView();
        filter.update(e -> dropMemtablesNotIn(tv, e));
        filter.feedback.newEpoch();
        filter.bumpUnseenGeneration(); // the node filter starts over from what is left
    }

    /**
     * Applying a change of the SSTable set failed: Needle's sources may no longer match the
     * tracker's view. Every live SSTable Needle has no keys for becomes unknown (and is scanned),
     * every SSTable that is no longer live goes: the sources are correct again, if less complete.
     */
    private void changeFailed(INotification notification, Throwable t) {
        filter.metrics.failures.inc();
        noSpam.error(
                "Needle could not apply {} to {}; reconciling with the live SSTables",
                notification.getClass().getSimpleName(),
                filter.qualifiedName(),
                t);
        List<Descriptor> toScan = new ArrayList<>();
        filter.update(e -> {
            View tv = cfs.getTracker().getView();
            Set<Descriptor> live = new HashSet<>();
            for (SSTableReader r : tv.liveSSTables()) {
                live.add(r.descriptor);
            }
            // A memtable no longer in the tracker's view was flushed into SSTables that are in it
            // (the tracker swaps them in one step), and so are represented below, or was dropped.
            dropMemtablesNotIn(tv, e);
            for (Descriptor d : e.descriptors()) {
                if (!live.contains(d)) {
                    e.removeSSTable(d);
                }
            }
            for (Descriptor d : live) {
                if (!e.has(d)) {
                    e.markUnknown(d);
                    toScan.add(d);
                }
            }
        });
        filter.scans.enqueue(toScan);
    }

    /** Drops the key sets (and untracked marks) of memtables no longer in the tracker's view. */
    private static void dropMemtablesNotIn(View tv, TableSources.Editor e) {
        Set<Memtable> inView = Collections.newSetFromMap(new IdentityHashMap<>());
        inView.addAll(tv.liveMemtables);
        inView.addAll(tv.flushingMemtables);
        for (Memtable m : e.memtablesAndUntracked()) {
            if (!inView.contains(m)) {
                e.removeMemtable(m);
            }
        }
    }

    private void pruneArrivals() {
        long now = System.nanoTime();
        arriving.values().removeIf(a -> now - a.since > ARRIVAL_TTL_NANOS);
    }

    int arrivals() {
        return arriving.size();
    }
}
