package dev.needle.cassandra.range;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.Deque;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Future;
import org.apache.cassandra.db.ConsistencyLevel;
import org.apache.cassandra.db.ReadCommand;
import org.apache.cassandra.db.filter.RowFilter;
import org.apache.cassandra.dht.Range;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.io.util.DataOutputBuffer;
import org.apache.cassandra.net.MessagingService;
import org.apache.cassandra.schema.TableId;
import org.apache.cassandra.service.pager.PagingState;

/**
 * The split reads a {@link ParallelScan} page started for the page after it, kept until the
 * client asks for that page: the nodes go on reading while the client takes the page in, as a
 * client-side scan's split readers do. Held by the paging state the page returned (with the
 * query and its consistency level), taken once, at most {@link #MAX_PENDING} at a
 * time (each holds at most a page's worth of rows per split), cancelled when the client has not
 * asked for them within {@link #EXPIRE_NANOS}. A next page that finds none reads as if there had
 * been no read-ahead.
 */
final class ScanReadAhead {
    /** Queries whose next page is read ahead at the same time, at most. */
    static final int MAX_PENDING = 8;

    /** Read-aheads the client has not asked for within this time are dropped. */
    static final long EXPIRE_NANOS = 10_000_000_000L;

    /** A split read started: the split's index in {@link Pending#splits} and its rows to come. */
    record InFlight(int split, Future<ParallelScan.Split> rows) {}

    /**
     * The next page's reads: the splits the page was cut into (the next page must cut the ring
     * the same way) and the reads started, in split order.
     */
    record Pending(List<Range<Token>> splits, Deque<InFlight> reading, long startedNanos) {
        void cancel() {
            reading.forEach(r -> r.rows().cancel(false)); // a read under way finishes; its rows are dropped
        }
    }

    /**
     * What a read-ahead is for: the query (its table, columns, restrictions with their values and
     * limits, as the range read command has them, so a statement prepared or not, run again,
     * finds it), its consistency level and page size, and the paging state of the page before.
     */
    private record Key(
            TableId table,
            String columnsAndLimits,
            ByteBuffer restrictions,
            ConsistencyLevel cl,
            int pageSize,
            PagingState after) {
        static Key of(ReadCommand query, ConsistencyLevel cl, int pageSize, PagingState after) {
            // The restrictions as bytes: their values exactly, whatever their types print as.
            try (DataOutputBuffer out = new DataOutputBuffer()) {
                RowFilter.serializer.serialize(query.rowFilter(), out, MessagingService.current_version);
                return new Key(
                        query.metadata().id,
                        query.columnFilter() + " " + query.limits(),
                        out.asNewBuffer(),
                        cl,
                        pageSize,
                        after);
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
    }

    private static final Map<Key, Pending> PENDING = new ConcurrentHashMap<>();

    private ScanReadAhead() {}

    /**
     * Keeps {@code next} for the page of {@code query} (at {@code cl}, paged by {@code pageSize})
     * that follows {@code after}; false (the caller cancels it) when as many read-aheads are
     * pending already.
     */
    static boolean put(ReadCommand query, ConsistencyLevel cl, int pageSize, PagingState after, Pending next) {
        expire();
        if (PENDING.size() >= MAX_PENDING) {
            return false;
        }
        Pending old = PENDING.put(Key.of(query, cl, pageSize, after), next);
        if (old != null) {
            old.cancel(); // the same query twice at the same point: the later read-ahead is as good
        }
        return true;
    }

    /** The reads kept for the page of this query after {@code after}, or null; they are the caller's now. */
    static Pending take(ReadCommand query, ConsistencyLevel cl, int pageSize, PagingState after) {
        return PENDING.remove(Key.of(query, cl, pageSize, after));
    }

    private static void expire() {
        long now = System.nanoTime();
        PENDING.entrySet().removeIf(e -> {
            if (now - e.getValue().startedNanos() > EXPIRE_NANOS) {
                e.getValue().cancel();
                return true;
            }
            return false;
        });
    }
}
