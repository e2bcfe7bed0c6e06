package dev.needle.cassandra.storage;

import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.LivenessInfo;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.Row;

/**
 * When a row holds live data, judged conservatively: doubt always counts as live.
 *
 * <p>A judgement depends on the time it is made at: a cell whose TTL ran out before {@code
 * nowInSec} is dead then, but live for a read whose own "now" is earlier (a client may set it,
 * protocol v5). So every judgement also reports, through an {@link ExpiryFloor}, the latest expiry
 * among the data it called dead only because of time; a read whose "now" is before that floor
 * must not trust the judgement.
 */
final class Liveness {
    private Liveness() {}

    /** The latest expiry time (seconds) of data judged dead because its TTL had run out. */
    static final class ExpiryFloor {
        private long value = Long.MIN_VALUE;

        void saw(long localExpirationTime) {
            if (localExpirationTime > value) {
                value = localExpirationTime;
            }
        }

        /** Reads with a "now" below this value may see data the judgement called dead; MIN_VALUE if none. */
        long value() {
            return value;
        }
    }

    /**
     * The newest timestamp of data in {@code row} that is live at {@code nowInSec} and not shadowed
     * by the row's own deletion, or {@code Long.MIN_VALUE} if there is none. Range tombstones and
     * collection deletions are ignored, which can only call a dead row live. Expired data is
     * reported to {@code floor} (which may be null when the caller judges at every read's time).
     */
    static long liveTimestamp(Row row, long nowInSec, ExpiryFloor floor) {
        if (row == null || row.isEmpty()) {
            return Long.MIN_VALUE;
        }
        DeletionTime rowDeletion = row.deletion().time();
        long shadowedUpTo = rowDeletion.isLive() ? Long.MIN_VALUE : rowDeletion.markedForDeleteAt();
        long max = Long.MIN_VALUE;
        LivenessInfo info = row.primaryKeyLivenessInfo();
        if (!info.isEmpty() && info.timestamp() > shadowedUpTo) {
            if (info.isLive(nowInSec)) {
                max = info.timestamp();
            } else if (info.isExpiring() && floor != null) {
                floor.saw(info.localExpirationTime());
            }
        }
        for (Cell<?> cell : row.cells()) {
            if (cell.timestamp() <= shadowedUpTo) {
                continue;
            }
            if (cell.isLive(nowInSec)) {
                if (cell.timestamp() > max) {
                    max = cell.timestamp();
                }
            } else if (cell.isExpiring() && floor != null) {
                floor.saw(cell.localDeletionTime());
            }
        }
        return max;
    }
}
