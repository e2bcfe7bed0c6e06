package dev.needle.cassandra.range;

import java.util.ArrayList;
import java.util.List;

/**
 * The batches in which an index page takes its entries from an {@link EntryCursor}, each batch's
 * rows then read with one key list ({@link KeyFetch}): {@link #FETCH_BATCH} first, each later
 * batch {@link #FETCH_GROWTH} times the one before, up to {@link #FETCH_BATCH_MAX}.
 */
final class EntryBatches {
    /**
     * Entries whose rows are fetched together (one key list) in a page's first batch: few, so that
     * the first rows come soon and a range far longer than its estimate shows after few reads.
     */
    static final int FETCH_BATCH = 256;

    /**
     * Each later batch is this many times the one before, up to {@link #FETCH_BATCH_MAX} entries:
     * a key list costs a request per range of the ring that its keys fall in (49 on 3 nodes of
     * 16 tokens at replication factor 1), so a long answer is fetched in fewer, longer lists.
     */
    static final int FETCH_GROWTH = 4;

    /** The longest batch. */
    static final int FETCH_BATCH_MAX = 4096;

    private final EntryCursor cursor;
    private int size = FETCH_BATCH;

    EntryBatches(EntryCursor cursor) {
        this.cursor = cursor;
    }

    /**
     * The next batch's entries (fewer at the cursor's end; none past it), at most as many as
     * the page still has {@code room} for, unless that is under {@link #FETCH_BATCH} (some
     * entries may be stale).
     */
    List<EntryCursor.Position> next(int room) {
        int n = Math.min(size, Math.max(FETCH_BATCH, room));
        size = Math.min(FETCH_BATCH_MAX, size * FETCH_GROWTH);
        List<EntryCursor.Position> batch = new ArrayList<>(n);
        EntryCursor.Position p;
        while (batch.size() < n && (p = cursor.next()) != null) {
            batch.add(p);
        }
        return batch;
    }
}
