package dev.needle.cassandra.storage;

import dev.needle.cassandra.base.NeedleOptions;
import dev.needle.filter.KeyState;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.Collection;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.function.Consumer;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.lifecycle.LifecycleNewTracker;
import org.apache.cassandra.db.lifecycle.View;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.index.Index;
import org.apache.cassandra.index.SecondaryIndexBuilder;
import org.apache.cassandra.io.sstable.Component;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.SSTableFlushObserver;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.utils.NoSpamLogger;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The storage filter of one table on this node: which partitions hold live data here.
 *
 * <p>Sources, newest first: the exact key sets of the memtables (from the {@linkplain WritePath
 * write path}), and what is known of each SSTable (collected by an {@linkplain KeySetObserver
 * observer} while it was written, {@linkplain SavedKeys loaded} from the file saved with it, or
 * {@linkplain SSTableScans scanned}), made complete at start by {@link Startup} and kept in step
 * with Cassandra's tracker by {@link SSTableChanges}. They form one immutable {@link TableSources},
 * replaced as a whole under this object's lock whenever a source comes or goes; a lookup reads
 * one TableSources and takes no lock. A key holds live data if some source holds live-looking data for
 * it newer than every partition deletion of it; row and range deletions and expired TTLs are
 * learned by {@linkplain FeedbackRemoval feedback}.
 *
 * <p>Never a false negative (docs/invariants.md, invariant 1): whatever Needle does not know makes
 * the sources not ready, and sources that are not ready answer LIVE for every key. Nothing here may
 * fail a write, a flush, a compaction or a stream: errors are caught, logged, counted, and cost
 * only skipping.
 *
 * <p>Longer than 400 lines because every change of the sources takes this object's one lock
 * ({@link #update}): the callbacks that change them (writes that fail, observers, scans, node
 * filter reports) stay beside it; what only reads or saves was moved out.
 */
public final class StorageFilter {
    private static final Logger logger = LoggerFactory.getLogger(StorageFilter.class);
    private static final NoSpamLogger noSpam = NoSpamLogger.getLogger(logger, 1, TimeUnit.MINUTES);

    final ColumnFamilyStore cfs;
    final NeedleOptions options;
    final NeedleMetrics metrics;
    final String indexName;
    final FeedbackRemoval feedback;
    final SavedKeys saved;
    final SSTableScans scans;
    private final SSTableChanges changes;
    private final WritePath writes;

    private volatile TableSources sources = TableSources.INITIAL;
    /** Counts the changes after which keys may be live here that no {@link KeyEvents} reported. */
    private volatile long unseenGeneration;

    private volatile KeyEvents events;

    public StorageFilter(ColumnFamilyStore cfs, NeedleOptions options, String indexName) {
        this.cfs = cfs;
        this.options = options;
        this.indexName = indexName;
        this.feedback = new FeedbackRemoval(cfs);
        this.saved = new SavedKeys(this, indexName);
        this.scans = new SSTableScans(this);
        this.changes = new SSTableChanges(this);
        this.writes = new WritePath(this);
        this.metrics = new NeedleMetrics(
                cfs.keyspace.getName(), cfs.name, indexName, this::stats); // last: its gauges read the rest
        Faults.install();
    }

    /** {@code keyspace.table}, as the logs name the table. */
    String qualifiedName() {
        return cfs.keyspace.getName() + "." + cfs.name;
    }

    // ---- the read path ---------------------------------------------------------------------

    TableSources sources() {
        return sources;
    }

    /** Whether lookups can skip anything now. */
    public boolean isReady() {
        return sources.ready();
    }

    /**
     * The state of a partition key on this node, for a read whose "now" is {@code nowInSec} (the
     * query's, which a client may set): LIVE, DELETED (only tombstones here) or ABSENT. Lock-free.
     *
     * @param token the key's token, or null
     */
    public KeyState lookup(ByteBuffer key, Token token, long nowInSec) {
        return lookup(key, Keys.hash(key), token, nowInSec);
    }

    /** {@link #lookup(ByteBuffer, Token, long)} for a caller that has hashed the key already (with {@code Hashing.hash}). */
    public KeyState lookup(ByteBuffer key, long hash, Token token, long nowInSec) {
        KeyState s = sources.lookup(key, hash, token, nowInSec, options.tracksDeletions());
        if (s == KeyState.LIVE && options.tracksDeletions() && feedback.provenDead(key, hash, nowInSec)) {
            return KeyState.DELETED;
        }
        return s;
    }

    /**
     * Why a read of {@code key} at {@code nowInSec} would or would not be skipped: the answer, then
     * one line per source, as {source, answer, detail}.
     */
    public List<String[]> explain(ByteBuffer key, long nowInSec) {
        TableSources v = sources;
        long hash = Keys.hash(key);
        Token token = cfs.metadata().partitioner.getToken(key);
        List<String[]> out = new ArrayList<>();
        KeyState answer = lookup(key, token, nowInSec);
        String why = !v.ready()
                ? "not ready: every key is LIVE"
                : nowInSec < v.expiryFloor()
                        ? "the read's now is before the expiry floor " + v.expiryFloor() + ": LIVE"
                        : answer == KeyState.DELETED
                                        && v.lookup(key, hash, token, nowInSec, options.tracksDeletions())
                                                == KeyState.LIVE
                                ? "a feedback read proved the key holds no live data"
                                : "from the sources below";
        out.add(new String[] {"answer", answer.name(), why});
        out.addAll(v.explain(key, hash, token));
        return out;
    }

    /**
     * A read of {@code key} that the filters called LIVE returned nothing: check locally, in the
     * background, whether this node holds any live data for it, and remember it as dead if not.
     */
    public void readFoundNothing(ByteBuffer key) {
        if (!options.tracksDeletions() || !isReady()) {
            return;
        }
        metrics.emptyAfterLive.inc();
        ByteBuffer copy = Keys.copy(key);
        if (!feedback.startVerifying(copy)) {
            return;
        }
        boolean queued = Background.feedback(() -> {
            try {
                long hash = Keys.hash(copy);
                if (feedback.verify(copy, hash)) {
                    metrics.feedbackRemovals.inc();
                    KeyEvents ev = events;
                    if (ev != null) {
                        ev.provenDead(copy, partitionToken(copy));
                    }
                }
            } finally {
                feedback.doneVerifying(copy);
            }
        });
        if (!queued) {
            feedback.doneVerifying(copy);
            metrics.feedbackChecksDropped.inc();
        }
    }

    // ---- the write path and SSTables being written ------------------------------------------

    public Index.Indexer indexer(DecoratedKey key, Memtable memtable, long nowInSec) {
        return memtable == null ? null : writes.indexer(key, memtable, nowInSec);
    }

    public SSTableFlushObserver observer(Descriptor descriptor, LifecycleNewTracker tracker) {
        try {
            return changes.observer(descriptor, tracker);
        } catch (Throwable t) {
            observationFailed(descriptor, t);
            return null;
        }
    }

    synchronized MemtableKeys addMemtable(Memtable memtable) {
        MemtableKeys mk = sources.keysOf(memtable);
        if (mk == null) {
            mk = new MemtableKeys(memtable);
            sources = sources.edit().addMemtable(mk).build();
        }
        return mk;
    }

    /** Recording a write failed: its memtable may hold a key Needle does not know, until it is flushed. */
    void writeFailed(Memtable memtable, Throwable t) {
        metrics.failures.inc();
        noSpam.error(
                "Needle could not record a write to {}; nothing is skipped on this table until its memtable is flushed",
                qualifiedName(),
                t);
        update(e -> e.untrack(memtable));
    }

    void observed(Descriptor d, SSTableKeys keys) {
        changes.observed(d, keys);
    }

    void observationAborted(Descriptor d) {
        changes.forgetArrival(d);
    }

    void observationFailed(Descriptor d, Throwable t) {
        metrics.failures.inc();
        changes.forgetArrival(d);
        noSpam.warn(
                "Needle could not collect the keys of {} while it was written ({}); it will be scanned instead",
                d,
                t.toString(),
                t);
    }

    public SSTableChanges changes() {
        return changes;
    }

    // ---- changes of the sources -----------------------------------------------------------------

    /** Applies a change to the sources under the lock and publishes the next TableSources. */
    synchronized void update(Consumer<TableSources.Editor> change) {
        TableSources.Editor e = sources.edit();
        change.accept(e);
        publish(e);
    }

    /** Publishes the next TableSources; called under this object's lock. */
    private void publish(TableSources.Editor e) {
        if (e.unseenData) {
            unseenGeneration++;
        }
        sources = e.build();
    }

    /**
     * Grows whenever data may have become live here without a {@link KeyEvents} report (an
     * SSTable whose keys are unknown, a memtable holding an unrecorded write, a truncation or a
     * rebuild): whoever publishes this node's keys must then start over from the data.
     */
    public long unseenGeneration() {
        return unseenGeneration;
    }

    /** The token of a partition key of this table. */
    public Token partitionToken(ByteBuffer key) {
        return cfs.getPartitioner().getToken(key);
    }

    /**
     * Hands every partition key this node may hold data for to {@code action}: the memtables'
     * keys first, then the live SSTables' (read from their partition index). A key that was in a
     * memtable when this began is seen from the memtable or from the SSTable it was flushed to;
     * keys written later are reported through {@link KeyEvents} instead.
     */
    public void forEachKey(Consumer<ByteBuffer> action) throws IOException {
        for (MemtableKeys m : sources.memtables) {
            m.forEachKey(action);
        }
        try (ColumnFamilyStore.RefViewFragment refs =
                cfs.selectAndReference(View.selectFunction(org.apache.cassandra.db.lifecycle.SSTableSet.LIVE))) {
            for (SSTableReader r : refs.sstables) {
                try (org.apache.cassandra.io.sstable.KeyReader keys = r.keyReader()) {
                    while (!keys.isExhausted()) {
                        action.accept(keys.key());
                        keys.advance();
                    }
                }
            }
        }
    }

    /** Whoever must hear of keys becoming live or dead here (the node filter), or null. */
    public void events(KeyEvents events) {
        this.events = events;
    }

    KeyEvents events() {
        return events;
    }

    /**
     * Reporting keys to the node filter failed: it cannot know what it missed, so it must start
     * over from the data.
     */
    void eventFailed(Throwable t) {
        metrics.failures.inc();
        noSpam.error("Needle could not report a key of {} to its node filter; it starts over", qualifiedName(), t);
        bumpUnseenGeneration();
    }

    /** Reports the keys of an arriving SSTable to the node filter (all of them: a dead one only costs a read). */
    void reportArrivingKeys(SSTableReader reader) {
        KeyEvents ev = events;
        if (ev == null) {
            return;
        }
        try (org.apache.cassandra.io.sstable.KeyReader keys = reader.keyReader()) {
            while (!keys.isExhausted()) {
                ev.arriving(partitionToken(keys.key()));
                keys.advance();
            }
        } catch (IOException | RuntimeException e) {
            eventFailed(e);
        }
    }

    /** A change that makes whoever publishes this node's keys start over (truncation). */
    synchronized void bumpUnseenGeneration() {
        unseenGeneration++;
    }

    // ---- scans and builds --------------------------------------------------------------------

    boolean isOpen() {
        return !sources.closed;
    }

    /** An SSTable waits for a scan: its keys are unknown, or its partition deletions incomplete. */
    boolean needsScan(Descriptor d) {
        TableSources v = sources;
        SSTableKeys k = v.sstables.get(d);
        return v.unknown.contains(d) || (k != null && !k.tombstonesComplete);
    }

    /** A queued SSTable is no longer live: if Needle still counts it, it goes (a removal Needle missed). */
    void forgetIfNotLive(Descriptor d) {
        for (SSTableReader r : cfs.getTracker().getView().liveSSTables()) {
            if (r.descriptor.equals(d)) {
                return;
            }
        }
        update(e -> e.removeSSTable(d));
    }

    void scanned(SSTableReader reader, SSTableKeys keys) {
        Descriptor d = reader.descriptor;
        boolean[] wanted = {false};
        update(e -> {
            if (e.has(d)) {
                e.putSSTable(d, keys);
                wanted[0] = true;
            }
        });
        if (wanted[0]) {
            saved.save(reader, keys);
        }
    }

    void scanFailed(SSTableReader reader, Throwable t) {
        metrics.failures.inc();
        logger.error(
                "Needle could not read the keys of {}: reads of {} are not skipped while it is live. "
                        + "Check the SSTable (nodetool verify/scrub), then run nodetool rebuild_index {} {} {}",
                reader.descriptor,
                qualifiedName(),
                cfs.keyspace.getName(),
                cfs.name,
                indexName,
                t);
    }

    public SecondaryIndexBuilder builder(Collection<SSTableReader> sstables, boolean fullRebuild) {
        return scans.builderFor(sstables, fullRebuild);
    }

    // ---- lifecycle ---------------------------------------------------------------------------

    /** Called as the index registers, before it sees any write ({@link Startup#registered}). */
    public void registered() {
        Startup.registered(this);
    }

    /** Loads or builds the keys of every live SSTable ({@link Startup#initialize}); returns when done. */
    public void initialize() throws InterruptedException {
        Startup.initialize(this);
    }

    /**
     * SSTables about to go live without passing an observer (whole-SSTable streaming, import):
     * see {@link SavedKeys#validate}. Returns whether every SSTable is known; never throws.
     */
    public boolean validate(Collection<SSTableReader> sstables, boolean buildMissing) {
        return saved.validate(sstables, buildMissing);
    }

    /**
     * The index is dropped or the node stops: stop, and with {@code dropFiles} take the saved
     * filters out of the SSTables (unless the table itself is being dropped with them).
     */
    public void close(boolean dropFiles) {
        update(TableSources.Editor::closed);
        cfs.getTracker().unsubscribe(changes);
        metrics.release();
        if (dropFiles && cfs.isValid()) {
            saved.removeAll();
        }
    }

    public NeedleMetrics metrics() {
        return metrics;
    }

    public NeedleOptions options() {
        return options;
    }

    /** The name of the Needle index this filter belongs to. */
    public String indexName() {
        return indexName;
    }

    public String keyspace() {
        return cfs.keyspace.getName();
    }

    public String table() {
        return cfs.name;
    }

    public org.apache.cassandra.db.marshal.AbstractType<?> partitionKeyType() {
        return cfs.metadata().partitionKeyType;
    }

    public Component component() {
        return saved.component.component;
    }

    // ---- statistics --------------------------------------------------------------------------

    /** Numbers for metrics and the virtual table, from one TableSources. */
    public FilterStats stats() {
        return FilterStats.of(sources, feedback.size());
    }
}
