package dev.needle.cassandra.range;

import java.io.ByteArrayOutputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.apache.cassandra.utils.ByteBufferUtil;

/**
 * The paging state of a range query answered by the index: it stands where Cassandra's paging
 * state holds a partition key, and says after which entry the next page starts and what the
 * query's earlier pages did. Any driver hands it back unchanged.
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

    /**
     * Whether a paging state's key is an index position (so the query was answered by the index
     * and goes on from there), not a partition key of Cassandra's own paging.
     */
    static boolean isIndexPosition(ByteBuffer key) {
        if (key == null || key.remaining() < MAGIC.length + 12) {
            return false;
        }
        for (int i = 0; i < MAGIC.length - 1; i++) {
            if (key.get(key.position() + i) != MAGIC[i]) {
                return false;
            }
        }
        byte format = key.get(key.position() + MAGIC.length - 1);
        return format == FORMAT_1 || format == MAGIC[MAGIC.length - 1];
    }

    /**
     * The paging state's payload: the last entry read (value, partition key, clustering),
     * length-prefixed, then the query's progress (rows, nanoseconds; -1 when unknown).
     */
    static ByteBuffer encode(EntryCursor.Position p, RangeRead.Progress query) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.write(MAGIC); // tells this paging state from Cassandra's (see isIndexPosition)
            for (ByteBuffer b : new ByteBuffer[] {p.value(), p.pk(), p.ck()}) {
                out.writeInt(b.remaining());
                out.write(ByteBufferUtil.getArray(b));
            }
            out.writeLong(query == null ? -1 : query.rows());
            out.writeLong(query == null ? -1 : query.nanos());
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return ByteBuffer.wrap(bytes.toByteArray());
    }

    static Continuation decode(ByteBuffer state) {
        ByteBuffer b = state.duplicate();
        try {
            if (!isIndexPosition(b)) {
                throw new InvalidRequestException("not a paging state of a Needle range query");
            }
            byte format = b.get(b.position() + MAGIC.length - 1);
            b.position(b.position() + MAGIC.length);
            ByteBuffer[] parts = new ByteBuffer[3];
            for (int i = 0; i < 3; i++) {
                int n = b.getInt();
                ByteBuffer part = b.slice();
                part.limit(n);
                parts[i] = part;
                b.position(b.position() + n);
            }
            EntryCursor.Position after = new EntryCursor.Position(parts[0], parts[1], parts[2]);
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
        } catch (RuntimeException e) {
            if (e instanceof InvalidRequestException ire) {
                throw ire;
            }
            throw new InvalidRequestException("a corrupt paging state for a Needle range query: " + e);
        }
    }
}
