package dev.needle.cassandra.storage;

import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import org.apache.cassandra.concurrent.ScheduledExecutors;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.compaction.CompactionInfo;
import org.apache.cassandra.db.compaction.CompactionInterruptedException;
import org.apache.cassandra.db.compaction.CompactionManager;
import org.apache.cassandra.db.compaction.OperationType;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.Unfiltered;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;
import org.apache.cassandra.index.SecondaryIndexBuilder;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.ISSTableScanner;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.utils.FBUtilities;
import org.apache.cassandra.utils.TimeUUID;
import org.apache.cassandra.utils.concurrent.Ref;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The slow path: an SSTable's keys read from its data, for SSTables no observer saw whole (those
 * that predate the index, whose saved file is missing or does not match, that an observer failed
 * on) and to complete the partition deletions of streamed SSTables.
 *
 * <p>Scans run as index builds on Cassandra's secondary-index executor, so they show in {@code
 * nodetool compactionstats} with their progress. The queue is unbounded and keyed by SSTable:
 * nothing is dropped, however many SSTables wait. A scan that Cassandra stops (truncation, {@code
 * nodetool stop INDEX_BUILD}) is resumed 30 seconds later for the SSTables still live.
 */
final class SSTableScans {
    private static final Logger logger = LoggerFactory.getLogger(SSTableScans.class);
    private static final long RETRY_SECONDS = 30;

    private final StorageFilter filter;
    private final ColumnFamilyStore cfs;
    private final LinkedHashSet<Descriptor> queue = new LinkedHashSet<>();
    /** SSTables whose live reader covers only part of the file (a compaction is moving its start); retried on the next change. */
    private final Set<Descriptor> deferred = new LinkedHashSet<>();

    private boolean running;
    private CompletableFuture<Void> drained = CompletableFuture.completedFuture(null);

    SSTableScans(StorageFilter filter) {
        this.filter = filter;
        this.cfs = filter.cfs;
    }

    /** Queues SSTables for a scan (those already queued stay where they are). */
    synchronized void enqueue(Collection<Descriptor> descriptors) {
        if (descriptors.isEmpty()) {
            return;
        }
        queue.addAll(descriptors);
        if (!running) {
            running = true;
            drained = new CompletableFuture<>();
            try {
                CompactionManager.instance.submitIndexBuild(new QueueBuilder());
            } catch (RuntimeException e) {
                running = false;
                drained.complete(null);
                logger.warn(
                        "Needle could not start scanning {} SSTables of {} ({}); retrying in {} s",
                        queue.size(),
                        filter.qualifiedName(),
                        e.toString(),
                        RETRY_SECONDS);
                retryLater();
            }
        }
    }

    /** Completes when every queued scan has run (successfully or not). */
    synchronized CompletableFuture<Void> drained() {
        return drained;
    }

    /** The set of SSTables changed: SSTables deferred for a moving start may be whole again. */
    void retryDeferred() {
        List<Descriptor> again;
        synchronized (this) {
            if (deferred.isEmpty()) {
                return;
            }
            again = new ArrayList<>(deferred);
            deferred.clear();
        }
        enqueue(again);
    }

    private synchronized Descriptor next() {
        if (queue.isEmpty()) {
            running = false;
            drained.complete(null);
            return null;
        }
        Descriptor d = queue.iterator().next();
        queue.remove(d);
        return d;
    }

    private synchronized long queuedBytes() {
        long total = 0;
        Map<Descriptor, SSTableReader> live = liveReaders();
        for (Descriptor d : queue) {
            SSTableReader r = live.get(d);
            if (r != null) {
                total += r.uncompressedLength();
            }
        }
        return total;
    }

    private void retryLater() {
        ScheduledExecutors.optionalTasks.schedule(
                () -> {
                    List<Descriptor> again;
                    synchronized (this) {
                        again = new ArrayList<>(queue);
                        queue.clear();
                    }
                    enqueue(again);
                },
                RETRY_SECONDS,
                TimeUnit.SECONDS);
    }

    private Map<Descriptor, SSTableReader> liveReaders() {
        Map<Descriptor, SSTableReader> live = new LinkedHashMap<>();
        for (SSTableReader r : cfs.getTracker().getView().liveSSTables()) {
            live.put(r.descriptor, r);
        }
        return live;
    }

    /** Drains the queue, one SSTable at a time. */
    private final class QueueBuilder extends SecondaryIndexBuilder {
        private final TimeUUID id = TimeUUID.Generator.nextTimeUUID();
        private volatile Progress progress = new Progress(0);
        private volatile long total = queuedBytes();
        private volatile SSTableReader current;
        private volatile long done;

        @Override
        public CompactionInfo getCompactionInfo() {
            // Naming the SSTable being scanned: only operations on it (or on the whole table) stop the scan.
            SSTableReader r = current;
            long t = Math.max(total, done + progress.position);
            return new CompactionInfo(
                    cfs.metadata(),
                    OperationType.INDEX_BUILD,
                    done + progress.position,
                    t,
                    t,
                    id,
                    r == null ? List.of() : List.of(r));
        }

        @Override
        public void build() {
            Descriptor d;
            while ((d = next()) != null) {
                if (isStopRequested() || !filter.isOpen()) {
                    synchronized (SSTableScans.this) {
                        queue.add(d);
                        running = false;
                        drained.complete(null);
                    }
                    if (filter.isOpen()) {
                        logger.info(
                                "Needle scan of {} stopped with {} SSTables to go; resuming in {} s",
                                filter.qualifiedName(),
                                queue.size(),
                                RETRY_SECONDS);
                        retryLater();
                    }
                    throw new CompactionInterruptedException(getCompactionInfo());
                }
                scanIfNeeded(d);
                total = done + queuedBytes();
            }
        }

        private void scanIfNeeded(Descriptor d) {
            SSTableReader reader = liveReaders().get(d);
            if (reader == null) {
                filter.forgetIfNotLive(d);
                return;
            }
            if (reader.openReason == SSTableReader.OpenReason.EARLY
                    || reader.openReason == SSTableReader.OpenReason.MOVED_START) {
                synchronized (SSTableScans.this) {
                    deferred.add(d);
                }
                return;
            }
            if (!filter.needsScan(d)) {
                return;
            }
            Ref<SSTableReader> ref = reader.tryRef();
            if (ref == null) {
                filter.forgetIfNotLive(d);
                return;
            }
            try {
                progress = new Progress(0);
                current = reader;
                SSTableKeys keys = scan(reader, this, progress);
                filter.scanned(reader, keys);
            } catch (CompactionInterruptedException e) {
                synchronized (SSTableScans.this) {
                    queue.add(d);
                }
                throw e;
            } catch (Throwable t) {
                filter.scanFailed(reader, t);
            } finally {
                done += reader.uncompressedLength();
                progress = new Progress(0);
                current = null;
                ref.release();
            }
        }
    }

    /** Where a scan is in its SSTable, for the build's progress report. */
    static final class Progress {
        volatile long position;

        Progress(long position) {
            this.position = position;
        }
    }

    /**
     * A build Cassandra asks for: {@code nodetool rebuild_index} (every SSTable, again), and
     * SSTables arriving by {@code nodetool import} before they go live.
     */
    SecondaryIndexBuilder builderFor(Collection<SSTableReader> sstables, boolean fullRebuild) {
        List<SSTableReader> readers = new ArrayList<>(sstables);
        long bytes = 0;
        for (SSTableReader r : readers) {
            bytes += r.uncompressedLength();
        }
        long total = bytes;
        return new SecondaryIndexBuilder() {
            private final TimeUUID id = TimeUUID.Generator.nextTimeUUID();
            private volatile Progress progress = new Progress(0);
            private volatile long done;

            @Override
            public CompactionInfo getCompactionInfo() {
                return new CompactionInfo(
                        cfs.metadata(), OperationType.INDEX_BUILD, done + progress.position, total, total, id, readers);
            }

            @Override
            public void build() {
                if (fullRebuild) {
                    rebuildStarting(readers);
                }
                List<Descriptor> left = new ArrayList<>();
                for (SSTableReader r : readers) {
                    left.add(r.descriptor);
                }
                try {
                    for (SSTableReader r : readers) {
                        if (isStopRequested()) {
                            throw new CompactionInterruptedException(getCompactionInfo());
                        }
                        if (fullRebuild || needsBuild(r)) {
                            progress = new Progress(0);
                            try {
                                built(r, scan(r, this, progress));
                            } catch (CompactionInterruptedException e) {
                                throw e;
                            } catch (Throwable t) {
                                // Logged and counted; the SSTable stays unknown and is tried again in the background.
                                filter.scanFailed(r, t);
                                done += r.uncompressedLength();
                                continue;
                            }
                        }
                        left.remove(r.descriptor);
                        done += r.uncompressedLength();
                    }
                } finally {
                    // Whatever was not built is scanned in the background once live.
                    buildUnfinished(left);
                }
            }
        };
    }

    /** {@code nodetool rebuild_index}: nothing Needle knows of these SSTables is trusted until they are read again. */
    private void rebuildStarting(Collection<SSTableReader> readers) {
        logger.info("Needle rebuilding {} from {} SSTables", filter.qualifiedName(), readers.size());
        filter.update(e -> {
            for (SSTableReader r : readers) {
                if (e.has(r.descriptor)) {
                    e.markUnknown(r.descriptor);
                }
            }
        });
        filter.feedback.newEpoch();
    }

    /** A build Cassandra asked for: does this SSTable need it? (Not if a valid file was loaded for it, or it is known.) */
    private boolean needsBuild(SSTableReader r) {
        TableSources v = filter.sources();
        return !filter.changes().isPrepared(r.descriptor) && !v.sstables.containsKey(r.descriptor);
    }

    /** A build Cassandra asked for produced an SSTable's keys: live ones join the sources, others wait to go live. */
    private void built(SSTableReader reader, SSTableKeys keys) {
        Descriptor d = reader.descriptor;
        boolean[] live = {false};
        filter.update(e -> {
            if (e.has(d)) {
                e.putSSTable(d, keys);
                live[0] = true;
            }
        });
        if (!live[0]) {
            filter.changes().prepared(d, keys, false);
        } else {
            filter.saved.save(reader, keys);
        }
    }

    /** A build stopped or failed before these SSTables: those that are live, and unknown, are scanned in the background. */
    private void buildUnfinished(List<Descriptor> left) {
        List<Descriptor> unknown = new ArrayList<>();
        TableSources v = filter.sources();
        for (Descriptor d : left) {
            if (v.unknown.contains(d)) {
                unknown.add(d);
            }
        }
        enqueue(unknown);
    }

    /**
     * The exact key set of an SSTable, from its data: per partition whether it holds live data
     * (judged now), and its partition deletion.
     */
    SSTableKeys scan(SSTableReader reader, CompactionInfo.Holder holder, Progress progress) {
        Faults.hit("scan");
        SSTableKeysBuilder builder = new SSTableKeysBuilder();
        long nowInSec = FBUtilities.nowInSeconds();
        int n = 0;
        try (ISSTableScanner scanner = reader.getScanner()) {
            while (scanner.hasNext()) {
                if (holder != null && (++n & 1023) == 0) {
                    if (holder.isStopRequested()) {
                        throw new CompactionInterruptedException(holder.getCompactionInfo());
                    }
                    progress.position = scanner.getCurrentPosition();
                }
                try (UnfilteredRowIterator partition = scanner.next()) {
                    ByteBuffer key = partition.partitionKey().getKey();
                    DeletionTime pd = partition.partitionLevelDeletion();
                    long shadowedUpTo = pd.isLive() ? Long.MIN_VALUE : pd.markedForDeleteAt();
                    boolean live =
                            Liveness.liveTimestamp(partition.staticRow(), nowInSec, builder.expiryFloor) > shadowedUpTo;
                    while (!live && partition.hasNext()) {
                        Unfiltered u = partition.next();
                        live = u.isRow()
                                && Liveness.liveTimestamp((Row) u, nowInSec, builder.expiryFloor) > shadowedUpTo;
                    }
                    if (!pd.isLive()) {
                        builder.tombstone(key, new Tombstone(pd.markedForDeleteAt(), pd.localDeletionTime()));
                    }
                    builder.add(partition.partitionKey().getToken(), Keys.hash(key), live);
                }
            }
        }
        filter.metrics.sstablesScanned.inc();
        return builder.build(filter.options, true).forReader(reader);
    }
}
