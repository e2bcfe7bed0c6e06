package dev.needle.cassandra.range;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.util.SplittableRandom;
import org.apache.cassandra.exceptions.InvalidRequestException;
import org.junit.jupiter.api.Test;

/** The index position a range answer's paging state carries. */
class IndexPagingStateTest {
    private static ByteBuffer bytes(SplittableRandom r, int n) {
        byte[] b = new byte[n];
        for (int i = 0; i < n; i++) {
            b[i] = (byte) r.nextInt(256);
        }
        return ByteBuffer.wrap(b);
    }

    @Test
    void positionsSurviveTheirEncodingAndAreToldFromPartitionKeys() {
        SplittableRandom r = new SplittableRandom(7);
        for (int i = 0; i < 1_000; i++) {
            EntryCursor.Position p =
                    new EntryCursor.Position(bytes(r, r.nextInt(20)), bytes(r, r.nextInt(20)), bytes(r, r.nextInt(3)));
            RangeRead.Progress progress =
                    r.nextBoolean() ? null : new RangeRead.Progress(r.nextLong(1 << 40), r.nextLong(Long.MAX_VALUE));
            ByteBuffer encoded = IndexPagingState.encode(p, progress);
            assertTrue(IndexPagingState.isIndexPosition(encoded));
            // As a driver hands it back: inside a larger buffer, at an offset.
            ByteBuffer framed = ByteBuffer.allocate(encoded.remaining() + 10);
            framed.position(5);
            framed.put(encoded.duplicate());
            framed.position(5).limit(5 + encoded.remaining());
            assertEquals(new IndexPagingState.Continuation(p, progress), IndexPagingState.decode(framed.slice()));
        }
        assertFalse(IndexPagingState.isIndexPosition(ByteBuffer.wrap(new byte[] {0, 0, 0, 0, 0, 0, 0, 42})));
        assertFalse(IndexPagingState.isIndexPosition(null));
    }

    @Test
    void theRestScansPositionsSurviveTheirEncodingAndAreToldFromTheIndexs() {
        SplittableRandom r = new SplittableRandom(11);
        for (int i = 0; i < 1_000; i++) {
            EntryCursor.Position p =
                    new EntryCursor.Position(bytes(r, r.nextInt(20)), bytes(r, r.nextInt(20)), bytes(r, r.nextInt(3)));
            ByteBuffer scanKey = bytes(r, r.nextInt(30));
            ByteBuffer encoded = IndexPagingState.encodeRest(p, scanKey);
            assertTrue(IndexPagingState.isRestOfScan(encoded));
            assertFalse(IndexPagingState.isIndexPosition(encoded), "a rest scan's state is not an index position");
            assertFalse(IndexPagingState.isRestOfScan(IndexPagingState.encode(p, null)));
            assertEquals(new IndexPagingState.Rest(p, scanKey), IndexPagingState.decodeRest(encoded));
        }
        ByteBuffer encoded = IndexPagingState.encodeRest(
                new EntryCursor.Position(
                        ByteBuffer.wrap(new byte[8]), ByteBuffer.wrap(new byte[8]), ByteBuffer.allocate(0)),
                ByteBuffer.wrap(new byte[8]));
        ByteBuffer truncated = encoded.duplicate();
        truncated.limit(truncated.limit() - 3);
        InvalidRequestException e =
                assertThrows(InvalidRequestException.class, () -> IndexPagingState.decodeRest(truncated));
        assertTrue(e.getMessage().contains("corrupt paging state"), e.getMessage());
    }

    /** A page handed out before the progress was added (format 1) goes on, its progress unknown. */
    @Test
    void aFormat1PositionIsStillRead() {
        EntryCursor.Position p = new EntryCursor.Position(
                ByteBuffer.wrap(new byte[] {1, 2}), ByteBuffer.wrap(new byte[] {3}), ByteBuffer.allocate(0));
        ByteBuffer v1 = ByteBuffer.allocate(4 + 3 * 4 + 3);
        v1.put(new byte[] {'N', 'X', 'R', 1})
                .putInt(2)
                .put(new byte[] {1, 2})
                .putInt(1)
                .put((byte) 3)
                .putInt(0);
        v1.flip();
        assertTrue(IndexPagingState.isIndexPosition(v1));
        assertEquals(new IndexPagingState.Continuation(p, null), IndexPagingState.decode(v1));
        ByteBuffer v9 = v1.duplicate();
        v9.put(3, (byte) 9);
        assertFalse(IndexPagingState.isIndexPosition(v9), "an unknown format is not taken for a position");
    }

    @Test
    void aCorruptPositionIsAClearError() {
        ByteBuffer encoded = IndexPagingState.encode(
                new EntryCursor.Position(
                        ByteBuffer.wrap(new byte[8]), ByteBuffer.wrap(new byte[8]), ByteBuffer.allocate(0)),
                new RangeRead.Progress(5000, 123_456_789));
        ByteBuffer truncated = encoded.duplicate();
        truncated.limit(truncated.limit() - 5);
        InvalidRequestException e =
                assertThrows(InvalidRequestException.class, () -> IndexPagingState.decode(truncated));
        assertTrue(e.getMessage().contains("corrupt paging state"), e.getMessage());
    }
}
