package dev.needle.cassandra.node;

import dev.needle.cassandra.NeedleOptions;
import dev.needle.cassandra.storage.KeyEvents;
import dev.needle.cassandra.storage.StorageFilter;
import dev.needle.filter.BloomFilter;
import dev.needle.filter.CuckooFilter;
import dev.needle.filter.KeyFilter;
import dev.needle.filter.KeyState;
import java.nio.ByteBuffer;
import java.util.UUID;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.utils.FBUtilities;

/**
 * One table's node filter on its owner: the storage filter's keys, published. It hears from the
 * storage filter of every key that may have become live or dead ({@link KeyEvents}) and decides
 * whether the published set changes; the {@link NodeFilters publisher} sends the changes, the
 * snapshots and the heartbeats.
 *
 * <p>An epoch starts from the data (every key of the live SSTables and memtables that the
 * storage filter calls live) and then follows the events. Whenever the storage filter saw data
 * it could not report (an SSTable it had to scan, a write it could not record, a truncation), the
 * owner says "not ready" and starts a new epoch once the storage filter is ready again.
 */
final class OwnerTable implements KeyEvents {
    /** A snapshot's filter holds this many times the keys published when it is cut, so that the copies can grow. */
    static final double HEADROOM = 1.25;

    final UUID table;
    final StorageFilter storage;
    final NeedleOptions options;
    final OwnerFilter filter = new OwnerFilter();

    // Written by the publisher thread only.
    /** The storage filter's unseen generation this epoch started from. */
    long epochGeneration = -1;
    /** The epoch's first snapshot went out: copies can follow it. */
    volatile boolean published;
    /** Keys the last snapshot's filter has room for. */
    long snapshotCapacity;

    long lastBeatMillis;
    long lastSnapshotMillis;
    /** A copy asked for a snapshot (or the published set outgrew the last one). */
    volatile boolean snapshotWanted;

    final AtomicLong bytesSent = new AtomicLong();
    final AtomicLong changesSent = new AtomicLong();
    /** The part of {@link #bytesSent} that carried batches of changes (the rest carried snapshots). */
    final AtomicLong batchBytesSent = new AtomicLong();

    final AtomicLong snapshotsSent = new AtomicLong();
    final AtomicLong epochsStarted = new AtomicLong();
    /** Bytes of other nodes' snapshots and batches of this table applied to copies here. */
    final AtomicLong bytesReceived = new AtomicLong();

    OwnerTable(UUID table, StorageFilter storage, NeedleOptions options) {
        this.table = table;
        this.storage = storage;
        this.options = options;
    }

    String name() {
        return storage.keyspace() + "." + storage.table();
    }

    /** Heartbeats go out this often: five within the staleness bound, and at least ten a second. */
    long beatIntervalMillis() {
        return Math.max(2, Math.min(100, options.stalenessMillis / 5));
    }

    /** Whether the published set can be trusted by others right now. */
    boolean ready() {
        return published && storage.isReady() && storage.unseenGeneration() == epochGeneration && !filter.overflowed();
    }

    boolean live(ByteBuffer key, long nowInSec) {
        Token token = storage.partitionToken(key);
        return storage.lookup(key, token, nowInSec) == KeyState.LIVE;
    }

    @Override
    public void written(ByteBuffer key, long hash, boolean withLiveData) {
        // A write with live data makes the key live (or, behind a newer deletion, a false
        // positive, which costs a read): no lookup on the write path. Only a write that can end
        // liveness (a deletion) looks the key up, and only if it is published.
        if (withLiveData) {
            filter.publish(hash);
        } else {
            filter.retract(hash, () -> live(key, FBUtilities.nowInSeconds()));
        }
    }

    @Override
    public void provenDead(ByteBuffer key, long hash) {
        filter.retract(hash, () -> live(key, FBUtilities.nowInSeconds()));
    }

    @Override
    public void arriving(long hash) {
        filter.publish(hash);
    }

    /** The filter a snapshot carries: the published hashes, with room for growth. */
    KeyFilter snapshotFilter(long[] hashes) {
        long capacity = Math.max(4096, (long) (hashes.length * HEADROOM));
        while (true) {
            KeyFilter f = options.tracksDeletions()
                    ? CuckooFilter.create(capacity, options.fpRate)
                    : BloomFilter.create(capacity, options.fpRate);
            boolean all = true;
            for (long h : hashes) {
                if (!f.insertHash(h)) {
                    all = false;
                    break;
                }
            }
            if (all) {
                snapshotCapacity = capacity;
                return f;
            }
            capacity += capacity / 4;
        }
    }
}
