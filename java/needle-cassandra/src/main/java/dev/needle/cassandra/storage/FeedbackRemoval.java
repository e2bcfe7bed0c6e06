package dev.needle.cassandra.storage;

import java.nio.ByteBuffer;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.atomic.AtomicLongArray;
import org.apache.cassandra.db.ColumnFamilyStore;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.ReadExecutionController;
import org.apache.cassandra.db.SinglePartitionReadCommand;
import org.apache.cassandra.db.partitions.PartitionIterator;
import org.apache.cassandra.db.rows.RowIterator;
import org.apache.cassandra.utils.FBUtilities;

/**
 * Feedback removal: keys that the filters call LIVE but that hold no live data (deleted row by
 * row or by range, expired, or a deletion lost in a crash), proven so by a local read and then
 * skipped until the key is written again.
 *
 * <p>The per-SSTable filters are never changed by feedback (they are immutable, like their
 * SSTables, and saved with them); a proof is kept here instead, by exact partition key, so it can
 * never affect another key. A proof holds while no write has begun on the key's stripe since the
 * read, no data has arrived outside the write path (the {@linkplain #newEpoch() epoch}), and for
 * reads whose "now" is not earlier than the proof's (expired data may be live for such a read).
 * Proofs live in memory only; a restart relearns them.
 */
final class FeedbackRemoval {
    private static final int STRIPES = 4096;
    private static final int MAX_PROOFS = 200_000;

    private final ColumnFamilyStore cfs;
    // Per key stripe: writes begun and writes finished (the write path brackets every partition update).
    private final AtomicLongArray begun = new AtomicLongArray(STRIPES);
    private final AtomicLongArray finished = new AtomicLongArray(STRIPES);
    private final ConcurrentHashMap<ByteBuffer, Proof> proofs = new ConcurrentHashMap<>();
    private final Set<ByteBuffer> verifying = ConcurrentHashMap.newKeySet();
    private volatile long epoch;

    private record Proof(long begun, long epoch, long nowInSec) {}

    FeedbackRemoval(ColumnFamilyStore cfs) {
        this.cfs = cfs;
    }

    static int stripe(long hash) {
        return (int) (hash >>> 52) & (STRIPES - 1);
    }

    void writeBegins(int stripe) {
        begun.incrementAndGet(stripe);
    }

    void writeFinished(int stripe) {
        finished.incrementAndGet(stripe);
    }

    /** Data arrived that did not pass the write path (streaming, import) or left it (truncation): every proof is void. */
    void newEpoch() {
        epoch++;
        proofs.clear();
    }

    /** Whether a read of {@code key} at {@code nowInSec} may trust that the key holds no live data here. */
    boolean provenDead(ByteBuffer key, long hash, long nowInSec) {
        if (proofs.isEmpty()) {
            return false;
        }
        Proof p = proofs.get(key);
        return p != null && p.epoch == epoch && p.begun == begun.get(stripe(hash)) && nowInSec >= p.nowInSec;
    }

    /** Claims the key for one verification at a time; false if one is already running. */
    boolean startVerifying(ByteBuffer key) {
        return verifying.add(key);
    }

    void doneVerifying(ByteBuffer key) {
        verifying.remove(key);
    }

    /**
     * Reads the key locally and records a proof if no live data is found and no write touched
     * its stripe meanwhile. Returns whether a proof was recorded.
     */
    boolean verify(ByteBuffer key, long hash) {
        int s = stripe(hash);
        long e0 = epoch;
        long b0 = begun.get(s);
        if (b0 != finished.get(s)) {
            return false; // a write is in flight: the read could miss it
        }
        long now = FBUtilities.nowInSeconds();
        DecoratedKey dk = cfs.metadata().partitioner.decorateKey(key);
        SinglePartitionReadCommand cmd = SinglePartitionReadCommand.fullPartitionRead(cfs.metadata(), now, dk);
        try (ReadExecutionController ec = cmd.executionController();
                PartitionIterator it = cmd.executeInternal(ec)) {
            while (it.hasNext()) {
                try (RowIterator rows = it.next()) {
                    if (!rows.staticRow().isEmpty() || rows.hasNext()) {
                        return false;
                    }
                }
            }
        }
        if (begun.get(s) != b0 || finished.get(s) != b0 || epoch != e0) {
            return false;
        }
        if (proofs.size() >= MAX_PROOFS) {
            proofs.clear(); // bounded memory; forgetting a proof only costs a read
        }
        proofs.put(key, new Proof(b0, e0, now));
        return true;
    }

    int size() {
        return proofs.size();
    }
}
