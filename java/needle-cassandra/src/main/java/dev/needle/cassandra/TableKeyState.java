package dev.needle.cassandra;

import dev.needle.filter.FilterFormatException;
import dev.needle.filter.Hashing;
import dev.needle.filter.KeyState;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Collection;
import java.util.HashMap;
import java.util.HashSet;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.LinkedBlockingQueue;
import java.util.concurrent.ThreadPoolExecutor;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLongArray;
import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.ReadExecutionController;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.lifecycle.LifecycleNewTracker;
import org.apache.cassandra.db.lifecycle.LifecycleTransaction;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.partitions.PartitionIterator;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.db.rows.RowIterator;
import org.apache.cassandra.db.rows.Unfiltered;
import org.apache.cassandra.db.rows.UnfilteredRowIterator;
import org.apache.cassandra.db.compaction.OperationType;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.ISSTableScanner;
import org.apache.cassandra.io.sstable.SSTableFlushObserver;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.notifications.INotification;
import org.apache.cassandra.notifications.INotificationConsumer;
import org.apache.cassandra.notifications.MemtableDiscardedNotification;
import org.apache.cassandra.notifications.SSTableAddedNotification;
import org.apache.cassandra.notifications.SSTableDeletingNotification;
import org.apache.cassandra.notifications.SSTableListChangedNotification;
import org.apache.cassandra.notifications.TruncationNotification;
import org.apache.cassandra.utils.FBUtilities;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Which partitions of one table hold live data on this node.
 *
 * <p>Sources, newest first: the exact key sets of the memtables (from the write path), and one
 * filter per SSTable (built from its exact key set at flush, compaction or, for SSTables that
 * arrive any other way, by scanning them). A key is LIVE when some source holds live-looking
 * data for it newer than every partition deletion of it on this node; DELETED when sources hold
 * it with nothing live; ABSENT when no source holds it. Until every source is known (index
 * build, scans of streamed SSTables) every key is LIVE: Needle never skips what it cannot prove.
 *
 * <p>A read that finds no live data for a key the filters call LIVE (row deletes, range deletes,
 * expired TTLs, or a state lost in a crash) is verified by a local read; if no write touched the
 * key meanwhile, the key is remembered as proven dead until its next write (feedback removal).
 */
final class TableKeyState implements INotificationConsumer {
    private static final Logger logger = LoggerFactory.getLogger(TableKeyState.class);
    private static final int STRIPES = 4096;
    private static final int MAX_PROVEN_DEAD = 200_000;
    /** Tombstones within this margin of purgeability are forgotten early: forgetting is always safe. */
    private static final long PURGE_MARGIN_SECONDS = 3600;

    final ColumnFamilyStore cfs;
    final NeedleOptions options;
    final NeedleMetrics metrics;
    private final Path dir;

    private final ConcurrentHashMap<Memtable, MemtableKeys> memtables = new ConcurrentHashMap<>();
    private volatile MemtableKeys[] memtableArray = new MemtableKeys[0];
    private final Map<String, SSTableKeys> sstableMap = new LinkedHashMap<>();
    private volatile SSTableKeys[] sstables = new SSTableKeys[0];
    private volatile Map<ByteBuffer, Tombstone> tombstones = Map.of();
    /** SSTables whose keys are not known yet; while any exist, nothing is skipped. */
    private final Set<String> unknown = new HashSet<>();
    private volatile boolean complete;
    /** A memtable that held data before the index existed; nothing is skipped until it is flushed. */
    private volatile Memtable untracked;
    private final Map<String, SSTableKeys> fromObservers = new ConcurrentHashMap<>();

    // Feedback: per key-stripe counts of writes begun and finished, and keys proven dead.
    private final AtomicLongArray begun = new AtomicLongArray(STRIPES);
    private final AtomicLongArray finished = new AtomicLongArray(STRIPES);
    private final ConcurrentHashMap<ByteBuffer, Proof> provenDead = new ConcurrentHashMap<>();
    private final Set<ByteBuffer> verifying = ConcurrentHashMap.newKeySet();
    private volatile long epoch;

    private final ExecutorService background;
    private volatile boolean closed;

    private record Proof(long begun, long epoch) {}

    TableKeyState(ColumnFamilyStore cfs, NeedleOptions options, String indexName) {
        this.cfs = cfs;
        this.options = options;
        this.metrics = new NeedleMetrics(cfs.keyspace.getName(), cfs.name, indexName, this);
        this.dir = storageRoot().resolve(cfs.keyspace.getName()).resolve(cfs.name + "-" + cfs.metadata().id.toHexString())
                .resolve(indexName);
        ThreadPoolExecutor ex = new ThreadPoolExecutor(1, 1, 30, TimeUnit.SECONDS, new LinkedBlockingQueue<>(10_000),
                r -> {
                    Thread t = new Thread(r, "needle-" + cfs.keyspace.getName() + "." + cfs.name);
                    t.setDaemon(true);
                    return t;
                }, new ThreadPoolExecutor.DiscardPolicy());
        ex.allowCoreThreadTimeOut(true);
        this.background = ex;
    }

    /** Where the per-SSTable files live: -Dneedle.storage_dir, else "needle" beside the first data directory. */
    static Path storageRoot() {
        String configured = System.getProperty("needle.storage_dir");
        if (configured != null) {
            return Path.of(configured);
        }
        Path data = Path.of(DatabaseDescriptor.getAllDataFileLocations()[0]).toAbsolutePath();
        return (data.getParent() != null ? data.getParent() : data).resolve("needle");
    }

    // ---- the read path --------------------------------------------------------------------

    /** Whether lookups can skip anything yet. */
    boolean isReady() {
        return complete && untracked == null && unknownIsEmpty && !closed;
    }

    /** The state of a partition key on this node; see the class comment. Lock-free. */
    KeyState lookup(ByteBuffer key) {
        if (!complete || untracked != null || closed || !unknownIsEmpty) {
            return KeyState.LIVE;
        }
        long hash = Hashing.hash(key);
        MemtableKeys[] mems = memtableArray;
        SSTableKeys[] ss = sstables;
        if (!options.tracksDeletions()) {
            for (MemtableKeys m : mems) {
                if (m.get(key) != null) {
                    return KeyState.LIVE;
                }
            }
            for (SSTableKeys s : ss) {
                if (s.lookup(hash) != KeyState.ABSENT) {
                    return KeyState.LIVE;
                }
            }
            return KeyState.ABSENT;
        }
        boolean seen = false;
        long deletedAt = Long.MIN_VALUE;
        Tombstone t = tombstones.get(key);
        if (t != null) {
            deletedAt = t.markedForDeleteAt();
            seen = true;
        }
        MemtableKeys.Entry[] entries = null;
        for (int i = 0; i < mems.length; i++) {
            MemtableKeys.Entry e = mems[i].get(key);
            if (e != null) {
                if (entries == null) {
                    entries = new MemtableKeys.Entry[mems.length];
                }
                entries[i] = e;
                seen = true;
                deletedAt = Math.max(deletedAt, e.deletedAt);
            }
        }
        if (entries != null) {
            for (MemtableKeys.Entry e : entries) {
                if (e != null && e.maxLiveTimestamp > deletedAt) {
                    return liveUnlessProvenDead(key);
                }
            }
        }
        for (SSTableKeys s : ss) {
            KeyState st = s.lookup(hash);
            if (st == KeyState.LIVE) {
                // Data no newer than a partition deletion of the key is shadowed by it.
                if (s.maxTimestamp > deletedAt) {
                    return liveUnlessProvenDead(key);
                }
                seen = true;
            } else if (st == KeyState.DELETED) {
                seen = true;
            }
        }
        return seen ? KeyState.DELETED : KeyState.ABSENT;
    }

    private volatile boolean unknownIsEmpty = true;

    private KeyState liveUnlessProvenDead(ByteBuffer key) {
        if (!provenDead.isEmpty()) {
            Proof p = provenDead.get(key);
            if (p != null && p.epoch == epoch && p.begun == begun.get(stripe(key))) {
                return KeyState.DELETED;
            }
        }
        return KeyState.LIVE;
    }

    private static int stripe(ByteBuffer key) {
        return (int) (Hashing.hash(key) >>> 52) & (STRIPES - 1);
    }

    /**
     * A read of {@code key} that the filters called LIVE returned nothing: check locally, in the
     * background, whether this node holds any live data for it, and remember it as dead if not.
     */
    void readFoundNothing(ByteBuffer key) {
        if (!options.tracksDeletions() || !isReady()) {
            return;
        }
        metrics.emptyAfterLive.inc();
        ByteBuffer copy = ByteBuffer.allocate(key.remaining());
        copy.put(key.duplicate()).flip();
        if (!verifying.add(copy)) {
            return;
        }
        background.execute(() -> {
            try {
                verifyDead(copy);
            } catch (RuntimeException e) {
                logger.debug("Needle feedback read of a key in {}.{} failed; nothing changed", cfs.keyspace.getName(), cfs.name, e);
            } finally {
                verifying.remove(copy);
            }
        });
    }

    private void verifyDead(ByteBuffer key) {
        int s = stripe(key);
        long e0 = epoch;
        long b0 = begun.get(s);
        if (b0 != finished.get(s)) {
            return; // a write is in flight: the read could miss it
        }
        DecoratedKey dk = cfs.metadata().partitioner.decorateKey(key);
        SinglePartitionReadCommand cmd = SinglePartitionReadCommand.fullPartitionRead(cfs.metadata(), FBUtilities.nowInSeconds(), dk);
        boolean live = false;
        try (ReadExecutionController ec = cmd.executionController(); PartitionIterator it = cmd.executeInternal(ec)) {
            while (it.hasNext()) {
                try (RowIterator rows = it.next()) {
                    if (!rows.staticRow().isEmpty() || rows.hasNext()) {
                        live = true;
                    }
                }
            }
        }
        if (!live && begun.get(s) == b0 && finished.get(s) == b0 && epoch == e0) {
            if (provenDead.size() >= MAX_PROVEN_DEAD) {
                provenDead.clear(); // bounded memory; forgetting a proof only costs a read
            }
            provenDead.put(key, new Proof(b0, e0));
            metrics.feedbackRemovals.inc();
        }
    }

    // ---- the write path -------------------------------------------------------------------

    Index.Indexer indexer(DecoratedKey key, Memtable memtable, long nowInSec) {
        MemtableKeys mk = memtables.get(memtable);
        if (mk == null) {
            mk = addMemtable(memtable);
        }
        MemtableKeys keys = mk;
        ByteBuffer k = key.getKey();
        int s = stripe(k);
        return new Index.Indexer() {
            private MemtableKeys.Entry entry;

            private MemtableKeys.Entry entry() {
                if (entry == null) {
                    entry = keys.entry(k);
                }
                return entry;
            }

            @Override
            public void begin() {
                begun.incrementAndGet(s);
            }

            @Override
            public void partitionDelete(DeletionTime deletionTime) {
                entry().deleted(deletionTime.markedForDeleteAt(), deletionTime.localDeletionTime());
            }

            @Override
            public void rangeTombstone(org.apache.cassandra.db.RangeTombstone tombstone) {
                entry();
            }

            @Override
            public void insertRow(Row row) {
                noteRow(row);
            }

            @Override
            public void updateRow(Row oldRow, Row newRow) {
                noteRow(newRow);
            }

            private void noteRow(Row row) {
                long ts = Liveness.liveTimestamp(row, nowInSec);
                MemtableKeys.Entry e = entry();
                if (ts != Long.MIN_VALUE) {
                    e.live(ts);
                }
            }

            @Override
            public void finish() {
                entry();
                finished.incrementAndGet(s);
            }
        };
    }

    private synchronized MemtableKeys addMemtable(Memtable memtable) {
        MemtableKeys mk = memtables.get(memtable);
        if (mk == null) {
            mk = new MemtableKeys(memtable);
            memtables.put(memtable, mk);
            publishMemtables();
        }
        return mk;
    }

    private void publishMemtables() {
        memtableArray = memtables.values().toArray(new MemtableKeys[0]);
    }

    // ---- SSTables: flush and compaction ---------------------------------------------------

    /** Operations that rewrite SSTables this node already has: their outputs inherit the inputs' deletions. */
    private static final java.util.EnumSet<OperationType> REWRITES = java.util.EnumSet.of(OperationType.COMPACTION,
            OperationType.MAJOR_COMPACTION, OperationType.TOMBSTONE_COMPACTION, OperationType.GARBAGE_COLLECT,
            OperationType.CLEANUP, OperationType.SCRUB, OperationType.UPGRADE_SSTABLES, OperationType.RELOCATE,
            OperationType.ANTICOMPACTION);

    /**
     * An observer that collects the key set of an SSTable being written by a flush or a rewrite,
     * or null for anything else (streaming, imports): those SSTables are scanned once added, which
     * also reads their partition deletions, invisible to an observer.
     */
    SSTableFlushObserver observer(Descriptor descriptor, LifecycleNewTracker tracker) {
        OperationType op = tracker.opType();
        if (op != OperationType.FLUSH && !REWRITES.contains(op)) {
            return null;
        }
        Map<ByteBuffer, Tombstone> inherited = new HashMap<>();
        List<MemtableKeys> flushing = new ArrayList<>();
        boolean flush = op == OperationType.FLUSH;
        if (flush) {
            for (Memtable m : cfs.getTracker().getView().flushingMemtables) {
                MemtableKeys mk = memtables.get(m);
                if (mk != null) {
                    flushing.add(mk);
                }
            }
        } else if (tracker instanceof LifecycleTransaction txn) {
            synchronized (this) {
                for (SSTableReader r : txn.originals()) {
                    SSTableKeys k = sstableMap.get(r.descriptor.id.toString());
                    if (k != null) {
                        k.tombstones.forEach((key, t) -> inherited.merge(key, t, Tombstone::max));
                    }
                }
            }
        }
        long nowInSec = FBUtilities.nowInSeconds();
        long keepAfter = nowInSec - cfs.metadata().params.gcGraceSeconds + PURGE_MARGIN_SECONDS;
        String id = descriptor.id.toString();
        return new SSTableFlushObserver() {
            private final SSTableKeysBuilder builder = new SSTableKeysBuilder();
            private ByteBuffer key;
            private long shadowedUpTo;
            private boolean live;

            @Override
            public void begin() {}

            @Override
            public void startPartition(DecoratedKey k, long keyPosition, long keyPositionForSASI) {
                finishPartition();
                key = k.getKey();
                live = false;
                shadowedUpTo = Long.MIN_VALUE;
                if (flush) {
                    // The partition deletion this SSTable got from its memtable. Should several
                    // flushing memtables hold the key, the oldest deletion is taken: erring low is safe.
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
                    if (chosen != null) {
                        shadowedUpTo = chosen.markedForDeleteAt();
                        builder.tombstone(key, chosen);
                    }
                } else {
                    // Compaction output rows are already merged with the partition deletion.
                    Tombstone t = inherited.get(key);
                    if (t != null && t.localDeletionTime() >= keepAfter) {
                        builder.tombstone(key, t);
                    }
                }
            }

            @Override
            public void staticRow(Row row) {
                if (!live && Liveness.liveTimestamp(row, nowInSec) > shadowedUpTo) {
                    live = true;
                }
            }

            @Override
            public void nextUnfilteredCluster(Unfiltered unfiltered) {
                if (!live && unfiltered.isRow() && Liveness.liveTimestamp((Row) unfiltered, nowInSec) > shadowedUpTo) {
                    live = true;
                }
            }

            private void finishPartition() {
                if (key != null) {
                    builder.add(Hashing.hash(key), live);
                    key = null;
                }
            }

            @Override
            public void complete() {
                finishPartition();
                fromObservers.put(id, builder.build(id, options, Long.MAX_VALUE));
            }

            @Override
            public void abort(Throwable accumulate) {
                fromObservers.remove(id);
            }
        };
    }

    @Override
    public void handleNotification(INotification notification, Object sender) {
        if (closed) {
            return;
        }
        if (notification instanceof SSTableAddedNotification added) {
            Memtable m = added.memtable().orElse(null);
            if (m == null) {
                epoch++; // data that did not pass the write path (streaming, import): forget proofs
            }
            replace(List.of(), added.added, m);
        } else if (notification instanceof SSTableListChangedNotification changed) {
            replace(changed.removed, changed.added, null);
        } else if (notification instanceof MemtableDiscardedNotification discarded) {
            removeMemtable(discarded.memtable);
        } else if (notification instanceof TruncationNotification) {
            truncate();
        } else if (notification instanceof SSTableDeletingNotification deleting) {
            deleteFile(deleting.deleting.descriptor.id.toString());
        }
    }

    /** Swaps SSTables in and out; new SSTables first, so no key is ever missing from every source. */
    private void replace(Collection<SSTableReader> removed, Iterable<SSTableReader> added, Memtable flushed) {
        List<SSTableKeys> toSave = new ArrayList<>();
        List<SSTableReader> toScan = new ArrayList<>();
        synchronized (this) {
            for (SSTableReader r : added) {
                String id = r.descriptor.id.toString();
                SSTableKeys k = fromObservers.remove(id);
                if (k != null) {
                    k = new SSTableKeys(id, k.filter, k.tombstones, r.getMaxTimestamp());
                    sstableMap.put(id, k);
                    toSave.add(k);
                } else {
                    markUnknown(id);
                    toScan.add(r);
                }
            }
            for (SSTableReader r : removed) {
                String id = r.descriptor.id.toString();
                sstableMap.remove(id);
                resolveUnknown(id);
            }
            publishSSTables();
            if (flushed != null) {
                removeMemtable(flushed);
            }
        }
        for (SSTableKeys k : toSave) {
            background.execute(() -> save(k));
        }
        for (SSTableReader r : toScan) {
            scheduleScan(r);
        }
    }

    /** The memtable is flushed or discarded: its SSTables (if any) carry its keys from now on. */
    private synchronized void removeMemtable(Memtable m) {
        if (m == untracked) {
            untracked = null;
        }
        if (memtables.remove(m) != null) {
            publishMemtables();
        }
    }

    private void publishSSTables() {
        sstables = sstableMap.values().toArray(new SSTableKeys[0]);
        Map<ByteBuffer, Tombstone> merged = new HashMap<>();
        for (SSTableKeys k : sstables) {
            k.tombstones.forEach((key, t) -> merged.merge(key, t, Tombstone::max));
        }
        tombstones = merged;
    }

    private void markUnknown(String id) {
        synchronized (unknown) {
            unknown.add(id);
            unknownIsEmpty = false;
        }
    }

    private void resolveUnknown(String id) {
        synchronized (unknown) {
            unknown.remove(id);
            unknownIsEmpty = unknown.isEmpty();
        }
    }

    private void scheduleScan(SSTableReader reader) {
        org.apache.cassandra.utils.concurrent.Ref<SSTableReader> ref = reader.tryRef();
        if (ref == null) {
            return; // already released; it leaves the live set, and the unknown list, with a notification
        }
        background.execute(() -> {
            try {
                SSTableKeys k = scan(reader);
                synchronized (this) {
                    String id = reader.descriptor.id.toString();
                    synchronized (unknown) {
                        if (!unknown.contains(id)) {
                            return; // removed meanwhile
                        }
                    }
                    sstableMap.put(id, k);
                    publishSSTables();
                    resolveUnknown(id);
                }
                save(k);
            } catch (RuntimeException e) {
                logger.warn("Needle could not read the keys of {}; reads of {}.{} are not skipped until it is compacted away",
                        reader.descriptor, cfs.keyspace.getName(), cfs.name, e);
            } finally {
                ref.release();
            }
        });
    }

    /** The exact key set of an SSTable, from its data: the slow path for SSTables no observer saw. */
    SSTableKeys scan(SSTableReader reader) {
        SSTableKeysBuilder builder = new SSTableKeysBuilder();
        long nowInSec = FBUtilities.nowInSeconds();
        try (ISSTableScanner scanner = reader.getScanner()) {
            while (scanner.hasNext()) {
                try (UnfilteredRowIterator partition = scanner.next()) {
                    ByteBuffer key = partition.partitionKey().getKey();
                    DeletionTime pd = partition.partitionLevelDeletion();
                    long shadowedUpTo = pd.isLive() ? Long.MIN_VALUE : pd.markedForDeleteAt();
                    boolean live = Liveness.liveTimestamp(partition.staticRow(), nowInSec) > shadowedUpTo;
                    while (!live && partition.hasNext()) {
                        Unfiltered u = partition.next();
                        live = u.isRow() && Liveness.liveTimestamp((Row) u, nowInSec) > shadowedUpTo;
                    }
                    if (!pd.isLive()) {
                        builder.tombstone(key, new Tombstone(pd.markedForDeleteAt(), pd.localDeletionTime()));
                    }
                    builder.add(Hashing.hash(key), live);
                }
            }
        }
        metrics.sstablesScanned.inc();
        String id = reader.descriptor.id.toString();
        return builder.build(id, options, reader.getMaxTimestamp());
    }

    private Path fileFor(String sstableId) {
        return dir.resolve(sstableId + ".ndls");
    }

    private void save(SSTableKeys k) {
        try {
            k.write(fileFor(k.sstableId));
        } catch (IOException e) {
            logger.warn("Needle could not save the filter of SSTable {} of {}.{} under {} ({}); it will be rebuilt after a restart",
                    k.sstableId, cfs.keyspace.getName(), cfs.name, dir, e.getMessage());
        }
    }

    private void deleteFile(String sstableId) {
        background.execute(() -> {
            try {
                Files.deleteIfExists(fileFor(sstableId));
            } catch (IOException e) {
                logger.debug("could not delete {}", fileFor(sstableId), e);
            }
        });
    }

    // ---- lifecycle ------------------------------------------------------------------------

    /**
     * Loads or builds the keys of every live SSTable. Until it finishes, and while any SSTable's
     * keys are unknown, nothing is skipped. Runs when the index is created and at node start.
     */
    /**
     * Called as the index is registered, before it sees any write: the memtable of this moment may
     * hold writes the index never saw, so nothing is skipped until it is flushed or found empty.
     */
    void registered() {
        untracked = cfs.getTracker().getView().getCurrentMemtable();
    }

    void initialize() {
        List<SSTableReader> live;
        synchronized (this) {
            live = new ArrayList<>(cfs.getTracker().getView().liveSSTables());
            for (SSTableReader r : live) {
                if (!sstableMap.containsKey(r.descriptor.id.toString())) {
                    markUnknown(r.descriptor.id.toString());
                }
            }
            complete = true;
        }
        Memtable before = untracked;
        if (before != null && before.partitionCount() > 0) {
            // Its flush notification clears the mark; its SSTables are scanned.
            cfs.forceBlockingFlush(ColumnFamilyStore.FlushReason.INDEX_BUILD_STARTED);
        }
        synchronized (this) {
            if (untracked == before && (before == null || before.partitionCount() == 0)) {
                untracked = null; // it was empty when the index registered: every write to it was seen
            }
        }
        Set<String> liveIds = new HashSet<>();
        for (SSTableReader r : live) {
            String id = r.descriptor.id.toString();
            liveIds.add(id);
            Path file = fileFor(id);
            SSTableKeys k = null;
            if (Files.exists(file)) {
                try {
                    SSTableKeys read = SSTableKeys.read(id, file);
                    boolean sameKind = read.filter.tracksDeletions() == options.tracksDeletions();
                    k = sameKind ? new SSTableKeys(id, read.filter, read.tombstones, r.getMaxTimestamp()) : null;
                    if (k != null) {
                        metrics.sstablesLoaded.inc();
                    }
                } catch (FilterFormatException e) {
                    logger.warn("Needle filter file damaged, rebuilding it from the SSTable: {}", e.getMessage());
                } catch (IOException e) {
                    logger.warn("Needle could not read {}, rebuilding it from the SSTable: {}", file, e.getMessage());
                }
            }
            if (k == null) {
                scheduleScan(r);
                continue;
            }
            synchronized (this) {
                boolean stillWanted;
                synchronized (unknown) {
                    stillWanted = unknown.contains(id);
                }
                if (stillWanted) {
                    sstableMap.put(id, k);
                    publishSSTables();
                    resolveUnknown(id);
                }
            }
        }
        removeOrphans(liveIds);
        logger.info("Needle index on {}.{} {} ({} SSTables)", cfs.keyspace.getName(), cfs.name, options, live.size());
    }

    private void removeOrphans(Set<String> liveIds) {
        if (!Files.isDirectory(dir)) {
            return;
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(dir)) {
            for (Path f : files) {
                String name = f.getFileName().toString();
                String id = name.endsWith(".ndls") ? name.substring(0, name.length() - 5) : null;
                boolean current;
                synchronized (this) {
                    current = id != null && (liveIds.contains(id) || sstableMap.containsKey(id));
                }
                if (!current && (name.endsWith(".ndls") || name.endsWith(".tmp"))) {
                    Files.deleteIfExists(f);
                }
            }
        } catch (IOException e) {
            logger.debug("could not list {}", dir, e);
        }
    }

    /** Everything goes: the table was truncated. */
    synchronized void truncate() {
        epoch++;
        provenDead.clear();
        sstableMap.clear();
        publishSSTables();
        synchronized (unknown) {
            unknown.clear();
            unknownIsEmpty = true;
        }
        fromObservers.clear();
        background.execute(() -> removeOrphans(Set.of()));
    }

    /** The index is dropped: stop, and delete the saved filters. */
    void close(boolean deleteFiles) {
        closed = true;
        metrics.release();
        if (deleteFiles) {
            background.execute(() -> {
                removeOrphans(Set.of());
                try {
                    Files.deleteIfExists(dir);
                } catch (IOException e) {
                    logger.debug("could not remove {}", dir, e);
                }
            });
        }
        background.shutdown();
    }

    // ---- statistics -----------------------------------------------------------------------

    private long sumOverSSTables(java.util.function.ToLongFunction<SSTableKeys> f) {
        long n = 0;
        for (SSTableKeys k : sstables) {
            n += f.applyAsLong(k);
        }
        return n;
    }

    long filterBytes() {
        return sumOverSSTables(k -> k.filter.sizeInBytes());
    }

    long liveEntries() {
        return sumOverSSTables(k -> k.filter.liveCount());
    }

    long deletedEntries() {
        return sumOverSSTables(k -> k.filter.deletedCount());
    }

    long memtableKeys() {
        long n = 0;
        for (MemtableKeys m : memtableArray) {
            n += m.size();
        }
        return n;
    }

    int tombstonesTracked() {
        return tombstones.size();
    }

    int provenDeadKeys() {
        return provenDead.size();
    }

    int sstableCount() {
        return sstables.length;
    }
}
