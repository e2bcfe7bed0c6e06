package dev.needle.cassandra.storage;

import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.Keyspace;
import org.apache.cassandra.db.lifecycle.View;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.service.StorageService;
import org.apache.cassandra.utils.concurrent.OpOrder;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * How a storage filter becomes complete when its index is created or its node starts: the
 * memtables of that moment are distrusted until flushed or proven empty, and every live SSTable's
 * keys are loaded from its saved file or scanned.
 */
final class Startup {
    private static final Logger logger = LoggerFactory.getLogger(Startup.class);

    private Startup() {}

    /**
     * Called as the index registers, before it sees any write: the memtables of this moment may
     * hold writes the index never saw, so nothing is skipped until each is flushed or proven empty.
     */
    static void registered(StorageFilter filter) {
        ColumnFamilyStore cfs = filter.cfs;
        View tv = cfs.getTracker().getView();
        // While the node starts, nothing writes to an empty memtable before commit-log replay,
        // which comes after the indexes register: those memtables need no flush.
        boolean starting = StorageService.instance.isStarting();
        filter.update(e -> {
            for (Memtable m : tv.liveMemtables) {
                if (!starting || m.partitionCount() > 0) {
                    e.untrack(m);
                }
            }
            tv.flushingMemtables.forEach(e::untrack);
        });
        cfs.getTracker().subscribe(filter.changes());
    }

    /**
     * Loads or builds the keys of every live SSTable, and makes sure no memtable holds a write the
     * index did not see. Runs when the index is created and at node start, on Cassandra's index
     * management thread; returns when the sources are complete (or what could not be read is logged).
     */
    static void initialize(StorageFilter filter) throws InterruptedException {
        ColumnFamilyStore cfs = filter.cfs;
        // Writes that began before the index was writable have finished after this barrier.
        OpOrder.Barrier barrier = Keyspace.writeOrder.newBarrier();
        barrier.issue();
        barrier.await();
        boolean[] flush = {false};
        filter.update(e -> {
            for (Memtable m : filter.sources().untracked) {
                if (m.partitionCount() == 0 && m.isClean()) {
                    e.removeMemtable(m); // empty after every earlier write finished: every later write is seen
                } else {
                    flush[0] = true;
                }
            }
        });
        if (flush[0]) {
            cfs.forceBlockingFlush(ColumnFamilyStore.FlushReason.INDEX_BUILD_STARTED);
        }
        List<SSTableReader> toLoad = new ArrayList<>();
        List<Descriptor> toScan = new ArrayList<>();
        filter.update(e -> {
            for (SSTableReader r : cfs.getTracker().getView().liveSSTables()) {
                if (!e.has(r.descriptor)) {
                    e.markUnknown(r.descriptor);
                    toLoad.add(r);
                }
            }
        });
        for (SSTableReader r : toLoad) {
            SSTableKeys k = filter.saved.load(r);
            if (k == null) {
                toScan.add(r.descriptor);
            } else {
                filter.update(e -> {
                    if (e.isUnknown(r.descriptor)) {
                        e.putSSTable(r.descriptor, k);
                    }
                });
            }
        }
        filter.saved.removeLegacyFiles();
        filter.update(TableSources.Editor::initialized);
        filter.scans.enqueue(toScan);
        try {
            filter.scans.drained().get(7, TimeUnit.DAYS);
        } catch (ExecutionException | TimeoutException e) {
            logger.warn("Needle build of {} did not complete: {}", filter.qualifiedName(), e.toString());
        }
        TableSources v = filter.sources();
        logger.info(
                "Needle index {} on {} {}: {} SSTables known, {} loaded from saved filters, {} scanned{}",
                filter.indexName(),
                filter.qualifiedName(),
                filter.options,
                v.sstables.size(),
                toLoad.size() - toScan.size(),
                toScan.size(),
                v.ready()
                        ? "; ready"
                        : "; not ready (" + v.unknown.size() + " SSTables unknown, " + v.untracked.size()
                                + " memtables untracked)");
    }
}
