package dev.needle.cassandra;

import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.LivenessInfo;
import org.apache.cassandra.db.rows.Cell;
import org.apache.cassandra.db.rows.Row;

/** When a row holds live data, judged conservatively: doubt always counts as live. */
final class Liveness {
    private Liveness() {}

    /**
     * The newest timestamp of data in {@code row} that is live at {@code nowInSec} and not shadowed
     * by the row's own deletion, or {@code Long.MIN_VALUE} if there is none. Range tombstones and
     * collection deletions are ignored, which can only call a dead row live.
     */
    static long liveTimestamp(Row row, long nowInSec) {
        if (row == null || row.isEmpty()) {
            return Long.MIN_VALUE;
        }
        DeletionTime rowDeletion = row.deletion().time();
        long shadowedUpTo = rowDeletion.isLive() ? Long.MIN_VALUE : rowDeletion.markedForDeleteAt();
        long max = Long.MIN_VALUE;
        LivenessInfo info = row.primaryKeyLivenessInfo();
        if (!info.isEmpty() && info.isLive(nowInSec) && info.timestamp() > shadowedUpTo) {
            max = info.timestamp();
        }
        for (Cell<?> cell : row.cells()) {
            if (cell.isLive(nowInSec) && cell.timestamp() > shadowedUpTo && cell.timestamp() > max) {
                max = cell.timestamp();
            }
        }
        return max;
    }
}
