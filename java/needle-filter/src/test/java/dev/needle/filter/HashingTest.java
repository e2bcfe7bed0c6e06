package dev.needle.filter;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.util.List;
import org.junit.jupiter.api.Test;

/** XXH64 against the reference implementation's output, committed in format/vectors/xxh64.txt. */
class HashingTest {
    @Test
    void matchesReferenceVectors() throws Exception {
        List<String> lines =
                Files.readAllLines(TestFiles.formatDir().resolve("vectors/xxh64.txt"), StandardCharsets.UTF_8);
        int checked = 0;
        for (String line : lines) {
            if (line.startsWith("#") || line.isBlank()) {
                continue;
            }
            String kind = line.substring(0, line.indexOf(' '));
            String hex = line.substring(line.lastIndexOf(' ') + 1);
            String input = line.substring(kind.length() + 1, line.lastIndexOf(' '));
            byte[] data;
            if (kind.equals("bytes")) {
                int n = Integer.parseInt(input);
                data = new byte[n];
                for (int i = 0; i < n; i++) {
                    data[i] = (byte) ((i * 7 + 3) % 256);
                }
            } else {
                data = input.substring(1, input.length() - 1).getBytes(StandardCharsets.UTF_8);
            }
            assertEquals(Long.parseUnsignedLong(hex, 16), Hashing.hash(data), line);
            checked++;
        }
        assertTrue(checked > 70, "vector file had only " + checked + " vectors");
    }

    @Test
    void stringAndBytesHashAlike() {
        assertEquals(Hashing.hash("partition:42".getBytes(StandardCharsets.UTF_8)), Hashing.hash("partition:42"));
        assertEquals(0xEF46DB3751D8E999L, Hashing.hash(new byte[0]));
    }

    @Test
    void byteBuffersHashLikeTheirBytes() {
        byte[] data = "partition:42".getBytes(StandardCharsets.UTF_8);
        java.nio.ByteBuffer direct = java.nio.ByteBuffer.allocateDirect(data.length + 3);
        direct.put(new byte[] {9, 9, 9}).put(data).flip().position(3);
        java.nio.ByteBuffer heap = java.nio.ByteBuffer.wrap(new byte[data.length + 5], 2, data.length)
                .slice()
                .put(data)
                .flip();
        assertEquals(Hashing.hash(data), Hashing.hash(direct));
        assertEquals(3, direct.position(), "hashing moved the buffer");
        assertEquals(Hashing.hash(data), Hashing.hash(heap));
    }

    @Test
    void hashOfSubrangeEqualsHashOfCopy() {
        byte[] big = new byte[200];
        for (int i = 0; i < big.length; i++) {
            big[i] = (byte) (i * 31);
        }
        for (int off = 0; off < 40; off += 3) {
            for (int len = 0; len < 120; len += 7) {
                byte[] copy = java.util.Arrays.copyOfRange(big, off, off + len);
                assertEquals(Hashing.xxh64(copy, 0, len, 0), Hashing.xxh64(big, off, len, 0));
            }
        }
    }

    @Test
    void reduceStaysInRange() {
        java.util.SplittableRandom r = new java.util.SplittableRandom(3);
        for (int n : new int[] {1, 2, 3, 1000, 999_983, Integer.MAX_VALUE}) {
            for (int i = 0; i < 10_000; i++) {
                int v = Hashing.reduce(r.nextInt(), n);
                assertTrue(v >= 0 && v < n, v + " outside [0," + n + ")");
            }
        }
    }
}
