package dev.needle.cassandra.range;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.function.Function;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.utils.ByteBufferUtil;

/**
 * The paging state of a range query answered by the index: it stands where Cassandra's paging
 * state holds a partition key, and says after which entry the next page starts and what the
 * query's earlier pages did. A query whose index pages gave way to the scan for the rest of its
 * range ({@link LaterPages}) carries the entry its index pages ended at and, beside it, the
 * scan's own partition key (the row mark stays in Cassandra's paging state). Any driver hands it
 * back unchanged.
 */
final class IndexPagingState {
    private IndexPagingState() {}

    /** Where a paged query goes on: after this entry, with what its earlier pages did (null if unknown). */
    record Continuation(EntryCursor.Position after, RangeRead.Progress before) {}

    /**
     * The first bytes of the position an index answer's paging state holds. Format 2 adds the
     * query's {@link RangeRead.Progress} after the entry; format 1 (without it) is still read, from pages
     * handed out before an upgrade.
     */
    private static final byte[] MAGIC = {'N', 'X', 'R', 2};

    private static final byte FORMAT_1 = 1;

    /** The first bytes of the paging state of the scan that answers the rest of a range after index pages. */
    private static final byte[] REST_MAGIC = {'N', 'X', 'S', 1};

    /** Where the scan of the rest of a range goes on: after {@code after}, from the scan's partition key. */
    record Rest(EntryCursor.Position after, ByteBuffer scanKey) {}

    /**
     * Whether a paging state's key is an index position (so the query was answered by the index
     * and goes on from there), not a partition key of Cassandra's own paging.
     */
    static boolean isIndexPosition(ByteBuffer key) {
        if (!startsWith(key, MAGIC, MAGIC.length - 1, 12)) {
            return false;
        }
        byte format = key.get(key.position() + MAGIC.length - 1);
        return format == FORMAT_1 || format == MAGIC[MAGIC.length - 1];
    }

    /** Whether a paging state's key is that of the scan answering the rest of a range after index pages. */
    static boolean isRestOfScan(ByteBuffer key) {
        return startsWith(key, REST_MAGIC, REST_MAGIC.length, 16);
    }

    /** Whether {@code key} starts with the first {@code n} bytes of {@code magic} and has {@code more} bytes after it. */
    private static boolean startsWith(ByteBuffer key, byte[] magic, int n, int more) {
        if (key == null || key.remaining() < magic.length + more) {
            return false;
        }
        for (int i = 0; i < n; i++) {
            if (key.get(key.position() + i) != magic[i]) {
                return false;
            }
        }
        return true;
    }

    /**
     * The paging state's payload: the last entry read (value, partition key, clustering),
     * length-prefixed, then the query's progress (rows, nanoseconds; -1 when unknown).
     */
    static ByteBuffer encode(EntryCursor.Position p, RangeRead.Progress query) {
        return write(
                MAGIC,
                p.value(),
                p.pk(),
                p.ck(),
                query == null ? -1 : query.rows(),
                query == null ? -1 : query.nanos());
    }

    /**
     * The key of the rest scan's paging state: the entry the index pages ended at, then the
     * partition key of the scan's last row, length-prefixed.
     */
    static ByteBuffer encodeRest(EntryCursor.Position after, ByteBuffer scanKey) {
        return write(REST_MAGIC, after.value(), after.pk(), after.ck(), scanKey);
    }

    private static ByteBuffer write(byte[] magic, Object... parts) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.write(magic); // tells this paging state from Cassandra's
            for (Object part : parts) {
                if (part instanceof ByteBuffer b) {
                    out.writeInt(b.remaining());
                    out.write(ByteBufferUtil.getArray(b));
                } else {
                    out.writeLong((Long) part);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return ByteBuffer.wrap(bytes.toByteArray());
    }

    static Rest decodeRest(ByteBuffer state) {
        return parsed(state, b -> {
            if (!isRestOfScan(b)) {
                throw new InvalidRequestException("not a paging state of a Needle range query's scan");
            }
            b.position(b.position() + REST_MAGIC.length);
            EntryCursor.Position after = new EntryCursor.Position(part(b), part(b), part(b));
            ByteBuffer scanKey = part(b);
            if (b.hasRemaining()) {
                throw new IllegalArgumentException(b.remaining() + " bytes after the scan's key");
            }
            return new Rest(after, scanKey);
        });
    }

    /**
     * {@code parse} applied to a copy of {@code state}: what fails in it other than with a clear
     * error of its own is a corrupt paging state.
     */
    private static <T> T parsed(ByteBuffer state, Function<ByteBuffer, T> parse) {
        try {
            return parse.apply(state.duplicate());
        } catch (InvalidRequestException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new InvalidRequestException("a corrupt paging state for a Needle range query: " + e);
        }
    }

    /** The next length-prefixed part of {@code b}, advancing it. */
    private static ByteBuffer part(ByteBuffer b) {
        int n = b.getInt();
        if (n < 0 || n > b.remaining()) {
            throw new IllegalArgumentException("a part of " + n + " bytes where " + b.remaining() + " are left");
        }
        ByteBuffer part = b.slice();
        part.limit(n);
        b.position(b.position() + n);
        return part;
    }

    static Continuation decode(ByteBuffer state) {
        return parsed(state, b -> {
            if (!isIndexPosition(b)) {
                throw new InvalidRequestException("not a paging state of a Needle range query");
            }
            byte format = b.get(b.position() + MAGIC.length - 1);
            b.position(b.position() + MAGIC.length);
            EntryCursor.Position after = new EntryCursor.Position(part(b), part(b), part(b));
            RangeRead.Progress before = null;
            if (format != FORMAT_1) {
                long rows = b.getLong();
                long nanos = b.getLong();
                before = rows < 0 || nanos < 0 ? null : new RangeRead.Progress(rows, nanos);
            }
            if (b.hasRemaining()) {
                throw new IllegalArgumentException(b.remaining() + " bytes after the position");
            }
            return new Continuation(after, before);
        });
    }
}
