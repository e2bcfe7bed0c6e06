package dev.needle.cassandra.storage;

import java.nio.ByteBuffer;
import org.apache.cassandra.db.DecoratedKey;
import org.apache.cassandra.db.DeletionTime;
import org.apache.cassandra.db.RangeTombstone;
import org.apache.cassandra.db.memtable.Memtable;
import org.apache.cassandra.db.rows.Row;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.index.Index;

/**
 * The write path: every local write of the table (client writes, hints, batchlog and read-repair
 * mutations, commit-log replay) passes an {@link Index.Indexer} that records its partition key in
 * the key set of the memtable it goes to, before the write is acknowledged.
 *
 * <p>Nothing here may fail a write. If recording a write fails, its memtable is marked untracked
 * (nothing is skipped until it is flushed, when the flush observer sees every key it holds).
 */
final class WritePath {
    private final StorageFilter filter;

    WritePath(StorageFilter filter) {
        this.filter = filter;
    }

    Index.Indexer indexer(DecoratedKey key, Memtable memtable, long nowInSec) {
        MemtableKeys keys;
        ByteBuffer k;
        long hash;
        try {
            keys = filter.sources().keysOf(memtable);
            if (keys == null) {
                keys = filter.addMemtable(memtable);
            }
            k = key.getKey();
            hash = Keys.hash(k);
        } catch (Throwable t) {
            filter.writeFailed(memtable, t);
            return null;
        }
        return new Recorder(keys, k, key.getToken(), hash, nowInSec);
    }

    /** Records one partition update. */
    private final class Recorder implements Index.Indexer {
        private final MemtableKeys keys;
        private final ByteBuffer key;
        private final Token token;
        private final long hash;
        private final int stripe;
        private final long nowInSec;
        private MemtableKeys.Entry entry;
        /** The update holds data live at its time: the node filter publishes the key without a lookup. */
        private boolean withLiveData;

        Recorder(MemtableKeys keys, ByteBuffer key, Token token, long hash, long nowInSec) {
            this.keys = keys;
            this.key = key;
            this.token = token;
            this.hash = hash;
            this.stripe = FeedbackRemoval.stripe(hash);
            this.nowInSec = nowInSec;
        }

        private MemtableKeys.Entry entry() {
            if (entry == null) {
                entry = keys.entry(key);
            }
            return entry;
        }

        @Override
        public void begin() {
            filter.feedback.writeBegins(stripe);
            try {
                Faults.hit("write");
                entry();
            } catch (Throwable t) {
                filter.writeFailed(keys.memtable, t);
            }
        }

        @Override
        public void partitionDelete(DeletionTime deletionTime) {
            try {
                entry().deleted(deletionTime.markedForDeleteAt(), deletionTime.localDeletionTime());
            } catch (Throwable t) {
                filter.writeFailed(keys.memtable, t);
            }
        }

        @Override
        public void rangeTombstone(RangeTombstone tombstone) {
            // The key is held (entry() in begin); a range deletion never makes it live.
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
            try {
                Liveness.ExpiryFloor floor = new Liveness.ExpiryFloor();
                long ts = Liveness.liveTimestamp(row, nowInSec, floor);
                if (ts != Long.MIN_VALUE) {
                    entry().live(ts);
                    withLiveData = true;
                }
                if (floor.value() != Long.MIN_VALUE) {
                    keys.expiredDataWritten(floor.value());
                }
            } catch (Throwable t) {
                filter.writeFailed(keys.memtable, t);
            }
        }

        @Override
        public void finish() {
            filter.feedback.writeFinished(stripe);
            KeyEvents events = filter.events();
            if (events != null) {
                try {
                    events.written(key, token, withLiveData);
                } catch (Throwable t) {
                    filter.eventFailed(t);
                }
            }
        }
    }
}
