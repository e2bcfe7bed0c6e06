package dev.needle.filter;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.zip.CRC32C;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Format v1: round trips, the committed vectors, and rejection of every damaged input. */
class SerializationTest {

    @Test
    void committedVectorsAreReproducedByteForByte() throws IOException {
        Path dir = TestFiles.formatDir().resolve("vectors");
        for (Map.Entry<String, Filter> e : FormatVectors.build().entrySet()) {
            byte[] committed = Files.readAllBytes(dir.resolve(e.getKey() + ".bin"));
            assertArrayEquals(
                    committed,
                    e.getValue().toByteArray(),
                    e.getKey()
                            + ": the writer no longer produces the committed bytes (format change? see format/filter-v1.md)");
        }
    }

    @Test
    void committedVectorsLoadAndGiveTheCommittedAnswers() throws IOException {
        Path dir = TestFiles.formatDir().resolve("vectors");
        for (String name : FormatVectors.build().keySet()) {
            Filter loaded = FilterIO.read(dir.resolve(name + ".bin"));
            assertEquals(
                    Files.readAllLines(dir.resolve(name + ".answers"), StandardCharsets.UTF_8),
                    FormatVectors.answers(loaded),
                    name);
        }
    }

    @Test
    void committedBadVectorsAreRejected() {
        Path dir = TestFiles.formatDir().resolve("vectors");
        assertRejected(dir.resolve("bad-truncated.bin"), "truncated");
        assertRejected(dir.resolve("bad-payload-checksum.bin"), "corrupt payload: checksum mismatch");
        assertRejected(dir.resolve("bad-version-2.bin"), "unsupported filter format version 2");
        assertRejected(dir.resolve("bad-magic.bin"), "not a Needle filter");
    }

    private static void assertRejected(Path file, String fragment) {
        FilterFormatException e = assertThrows(FilterFormatException.class, () -> FilterIO.read(file));
        assertTrue(
                e.getMessage().contains(fragment) && e.getMessage().contains(file.toString()),
                "message '" + e.getMessage() + "' lacks '" + fragment + "' or the file name");
    }

    @Test
    void everyTruncationIsRejected() throws IOException {
        for (Filter f : FormatVectors.build().values()) {
            byte[] bytes = f.toByteArray();
            for (int len = 0; len < bytes.length; len++) {
                byte[] cut = java.util.Arrays.copyOf(bytes, len);
                FilterFormatException e = assertThrows(
                        FilterFormatException.class,
                        () -> FilterIO.read(cut),
                        f.kind() + " truncated to " + len + " of " + bytes.length + " bytes was loaded");
                assertTrue(e.getMessage().contains("truncated"), e.getMessage());
            }
            assertEquals(f.kind(), FilterIO.read(bytes).kind());
        }
    }

    @Test
    void everySingleBitFlipIsRejected() {
        for (Filter f : FormatVectors.build().values()) {
            byte[] bytes = f.toByteArray();
            for (int i = 0; i < bytes.length; i++) {
                for (int bit = 0; bit < 8; bit += 3) {
                    byte[] bad = bytes.clone();
                    bad[i] ^= (byte) (1 << bit);
                    int at = i;
                    assertThrows(
                            FilterFormatException.class,
                            () -> FilterIO.read(bad),
                            f.kind() + " with bit " + bit + " of byte " + at + " flipped was loaded");
                }
            }
        }
    }

    @Test
    void trailingBytesAreRejected() {
        byte[] bytes = CuckooFilter.create(100, 0.01).toByteArray();
        byte[] longer = java.util.Arrays.copyOf(bytes, bytes.length + 3);
        FilterFormatException e = assertThrows(FilterFormatException.class, () -> FilterIO.read(longer));
        assertTrue(e.getMessage().contains("unexpected bytes"), e.getMessage());
    }

    /** A header that lies consistently (its own checksum recomputed) is still caught by the cross-checks. */
    @Test
    void inconsistentHeadersAreRejected() {
        CuckooFilter f = CuckooFilter.create(1000, 0.01);
        for (int i = 0; i < 500; i++) {
            f.insertHash(i * 0x9E3779B97F4A7C15L);
        }
        byte[] bytes = f.toByteArray();
        assertRejectedHeader(bytes, 48, 1L << 40, "payload length");
        assertRejectedHeader(bytes, 16, 3L, "payload length");
        assertRejectedHeader(bytes, 24, 499L, "header says 499 entries");
        assertRejectedHeader(bytes, 16, -5L, "corrupt header");
    }

    private static void assertRejectedHeader(byte[] original, int offset, long value, String fragment) {
        byte[] bytes = original.clone();
        ByteBuffer h = ByteBuffer.wrap(bytes).order(ByteOrder.LITTLE_ENDIAN);
        h.putLong(offset, value);
        CRC32C crc = new CRC32C();
        crc.update(bytes, 0, 60);
        h.putInt(60, (int) crc.getValue());
        FilterFormatException e = assertThrows(FilterFormatException.class, () -> FilterIO.read(bytes));
        assertTrue(e.getMessage().contains(fragment), "message '" + e.getMessage() + "' lacks '" + fragment + "'");
    }

    @Test
    void filesAreWrittenAtomicallyAndReadBack(@TempDir Path tmp) throws IOException {
        DeletionAwareCuckooFilter f = DeletionAwareCuckooFilter.create(10_000, 0.001);
        for (int i = 0; i < 5000; i++) {
            f.insertHash(Hashing.hash("k" + i));
        }
        for (int i = 0; i < 1000; i++) {
            f.markDeletedHash(Hashing.hash("k" + i));
        }
        Path file = tmp.resolve("filter.ndlf");
        FilterIO.write(f, file);
        FilterIO.write(f, file); // replaces the existing file
        DeletionAwareCuckooFilter g = (DeletionAwareCuckooFilter) FilterIO.read(file);
        assertEquals(4000, g.liveCount());
        assertEquals(1000, g.deletedCount());
        int deletedAnswers = 0;
        for (int i = 0; i < 20_000; i++) {
            long h = Hashing.hash("k" + i);
            assertEquals(f.lookupHash(h), g.lookupHash(h), "the copy answers differently for k" + i);
            if (i >= 1000 && i < 5000) {
                assertEquals(KeyState.LIVE, g.lookupHash(h));
            } else if (i < 1000) {
                // A deleted key reads LIVE only when it collides with a live key's entry.
                deletedAnswers += g.lookupHash(h) == KeyState.DELETED ? 1 : 0;
                assertTrue(g.lookupHash(h) != KeyState.ABSENT, "deleted key k" + i + " answered ABSENT");
            }
        }
        assertTrue(deletedAnswers >= 990, deletedAnswers + " of 1000 deleted keys answered DELETED");
        try (var files = Files.list(tmp)) {
            assertEquals(1, files.count(), "a temporary file was left behind");
        }
    }
}
