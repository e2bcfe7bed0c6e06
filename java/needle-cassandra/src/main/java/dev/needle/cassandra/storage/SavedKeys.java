package dev.needle.cassandra.storage;

import dev.needle.filter.FilterFormatException;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Collection;
import java.util.Comparator;
import java.util.concurrent.TimeUnit;
import org.apache.cassandra.config.DatabaseDescriptor;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.io.sstable.format.SSTableReader;
import org.apache.cassandra.utils.NoSpamLogger;
import org.apache.cassandra.utils.concurrent.Ref;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * The keys of each SSTable saved beside it as its {@linkplain FilterComponent component}, so that
 * a restart, a stream or an import need not read the SSTable again: saved in the background once
 * known, loaded when an SSTable arrives without an observer or the node starts, removed with the
 * index. A file that is missing, damaged or of another SSTable only costs a scan.
 */
final class SavedKeys {
    private static final Logger logger = LoggerFactory.getLogger(SavedKeys.class);
    private static final NoSpamLogger noSpam = NoSpamLogger.getLogger(logger, 1, TimeUnit.MINUTES);

    private final StorageFilter filter;
    private final ColumnFamilyStore cfs;
    final FilterComponent component;

    SavedKeys(StorageFilter filter, String indexName) {
        this.filter = filter;
        this.cfs = filter.cfs;
        this.component = new FilterComponent(indexName);
    }

    /** The saved keys of an SSTable, or null if there is no valid file for it. */
    SSTableKeys load(SSTableReader r) {
        try {
            SSTableKeys k = component.read(r, filter.options);
            filter.metrics.sstablesLoaded.inc();
            return k;
        } catch (NoSuchFileException e) {
            return null;
        } catch (FilterFormatException e) {
            logger.warn(
                    "Needle filter file damaged or not of this SSTable, rebuilding it from the SSTable: {}",
                    e.getMessage());
            return null;
        } catch (IOException | RuntimeException e) {
            logger.warn(
                    "Needle could not read the saved filter of {}, rebuilding it from the SSTable: {}",
                    r.descriptor,
                    e.toString());
            return null;
        }
    }

    /**
     * SSTables about to go live without passing an observer (whole-SSTable streaming, import):
     * loads each one's saved file if it has a valid one. With {@code buildMissing} (streaming,
     * which Cassandra would otherwise fail) a missing or invalid file is replaced by a scan, here
     * and now. Returns whether every SSTable is known; never throws.
     */
    boolean validate(Collection<SSTableReader> sstables, boolean buildMissing) {
        boolean complete = true;
        for (SSTableReader r : sstables) {
            filter.reportArrivingKeys(r); // before they go live
            if (filter.changes().isPrepared(r.descriptor)) {
                continue;
            }
            SSTableKeys keys = load(r);
            if (keys != null) {
                filter.changes().prepared(r.descriptor, keys, true);
                continue;
            }
            if (!buildMissing) {
                complete = false;
                continue;
            }
            try {
                filter.changes()
                        .prepared(r.descriptor, filter.scans.scan(r, null, new SSTableScans.Progress(0)), false);
            } catch (Throwable t) {
                filter.scanFailed(r, t); // it goes live unknown, and is scanned again in the background
            }
        }
        return complete;
    }

    /** Saves an SSTable's keys as its component, in the background (a missing file only costs a scan after a restart). */
    void save(SSTableReader reader, SSTableKeys keys) {
        Ref<SSTableReader> ref = reader.tryRef(); // keeps the SSTable's files while the file is written beside them
        if (ref == null) {
            return;
        }
        Background.files(() -> {
            try {
                TableSources sources = filter.sources();
                if (sources.closed || !sources.sstables.containsKey(reader.descriptor)) {
                    return;
                }
                component.write(reader, keys);
                component.register(currentReader(reader), cfs.getTracker());
                filter.metrics.sstablesSaved.inc();
            } catch (IOException | RuntimeException e) {
                filter.metrics.failures.inc();
                noSpam.warn(
                        "Needle could not save the filter of {} ({}); it will be rebuilt after a restart",
                        reader.descriptor,
                        e.toString());
            } finally {
                ref.release();
            }
        });
    }

    private SSTableReader currentReader(SSTableReader reader) {
        for (SSTableReader r : cfs.getTracker().getView().liveSSTables()) {
            if (r.descriptor.equals(reader.descriptor)) {
                return r;
            }
        }
        return reader;
    }

    /** Takes the saved files out of every live SSTable (the index is dropped, not the table). */
    void removeAll() {
        for (SSTableReader r : cfs.getTracker().getView().liveSSTables()) {
            try {
                component.unregisterAndDelete(r, cfs.getTracker());
            } catch (IOException | RuntimeException e) {
                logger.warn(
                        "Needle could not remove {} of {}: {}", component.component.name, r.descriptor, e.toString());
            }
        }
    }

    /** Before the filters were SSTable components they lived in {@code <data>/../needle/}; that folder goes. */
    void removeLegacyFiles() {
        try {
            Path data = Path.of(DatabaseDescriptor.getAllDataFileLocations()[0]).toAbsolutePath();
            Path legacy = (data.getParent() != null ? data.getParent() : data)
                    .resolve("needle")
                    .resolve(cfs.keyspace.getName())
                    .resolve(cfs.name + "-" + cfs.metadata().id.toHexString());
            if (Files.isDirectory(legacy)) {
                try (var walk = Files.walk(legacy)) {
                    for (Path p : walk.sorted(Comparator.reverseOrder()).toList()) {
                        Files.deleteIfExists(p);
                    }
                }
                logger.info("Needle removed the filters of an earlier version under {}", legacy);
            }
        } catch (IOException | RuntimeException e) {
            logger.debug("could not remove legacy Needle files", e);
        }
    }
}
