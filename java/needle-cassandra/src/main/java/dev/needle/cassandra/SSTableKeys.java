package dev.needle.cassandra;

import dev.needle.filter.FilterFormatException;
import dev.needle.filter.FilterIO;
import dev.needle.filter.KeyState;
import dev.needle.filter.KeyStateFilter;
import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;
import java.util.zip.CRC32C;

/**
 * What Needle knows of one SSTable: a filter over its partition keys (LIVE: the SSTable holds
 * live-looking data for the key; DELETED: it holds the key with tombstones only), the exact
 * partition deletions it holds, and its newest timestamp. Immutable, like the SSTable.
 *
 * <p>Saved beside the node's data as {@code <sstable id>.ndls} (format: {@code format/sstable-keys-v1.md}).
 */
final class SSTableKeys {
    private static final int MAGIC = 0x534C444E; // "NDLS"
    private static final int VERSION = 1;

    final String sstableId;
    final KeyStateFilter filter;
    final Map<ByteBuffer, Tombstone> tombstones;
    final long maxTimestamp;

    SSTableKeys(String sstableId, KeyStateFilter filter, Map<ByteBuffer, Tombstone> tombstones, long maxTimestamp) {
        this.sstableId = sstableId;
        this.filter = filter;
        this.tombstones = tombstones.isEmpty() ? Collections.emptyMap() : Collections.unmodifiableMap(tombstones);
        this.maxTimestamp = maxTimestamp;
    }

    KeyState lookup(long hash) {
        return filter.lookupHash(hash);
    }

    /** Writes atomically: temporary file, fsync, rename. */
    void write(Path file) throws IOException {
        FilterIO.writeAtomically(file, out -> {
            int size = 20;
            for (ByteBuffer k : tombstones.keySet()) {
                size += 4 + k.remaining() + 16;
            }
            ByteBuffer head = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
            head.putInt(MAGIC).putShort((short) VERSION).putShort((short) 0).putLong(maxTimestamp).putInt(tombstones.size());
            for (Map.Entry<ByteBuffer, Tombstone> e : tombstones.entrySet()) {
                head.putInt(e.getKey().remaining()).put(e.getKey().duplicate());
                head.putLong(e.getValue().markedForDeleteAt()).putLong(e.getValue().localDeletionTime());
            }
            CRC32C crc = new CRC32C();
            crc.update(head.array(), 0, size);
            out.write(head.array(), 0, size);
            out.write(ByteBuffer.allocate(4).order(ByteOrder.LITTLE_ENDIAN).putInt((int) crc.getValue()).array());
            filter.writeTo(out);
        });
    }

    /** Reads a saved file; any damage is a {@link FilterFormatException} naming the file. */
    static SSTableKeys read(String sstableId, Path file) throws IOException {
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            DataInputStream din = new DataInputStream(in);
            byte[] fixed = in.readNBytes(20);
            if (fixed.length < 20) {
                throw new FilterFormatException("truncated header");
            }
            ByteBuffer h = ByteBuffer.wrap(fixed).order(ByteOrder.LITTLE_ENDIAN);
            if (h.getInt() != MAGIC) {
                throw new FilterFormatException("not a Needle SSTable key file");
            }
            int version = h.getShort() & 0xFFFF;
            if (version != VERSION) {
                throw new FilterFormatException("unsupported version " + version);
            }
            h.getShort();
            long maxTimestamp = h.getLong();
            int n = h.getInt();
            if (n < 0 || n > 100_000_000) {
                throw new FilterFormatException("corrupt tombstone count " + n);
            }
            CRC32C crc = new CRC32C();
            crc.update(fixed);
            Map<ByteBuffer, Tombstone> tombstones = new HashMap<>();
            byte[] len = new byte[4];
            byte[] times = new byte[16];
            for (int i = 0; i < n; i++) {
                din.readFully(len);
                crc.update(len);
                int l = ByteBuffer.wrap(len).order(ByteOrder.LITTLE_ENDIAN).getInt();
                if (l < 0 || l > 65_535) {
                    throw new FilterFormatException("corrupt key length " + l);
                }
                byte[] key = new byte[l];
                din.readFully(key);
                din.readFully(times);
                crc.update(key);
                crc.update(times);
                ByteBuffer t = ByteBuffer.wrap(times).order(ByteOrder.LITTLE_ENDIAN);
                tombstones.put(ByteBuffer.wrap(key), new Tombstone(t.getLong(), t.getLong()));
            }
            byte[] stored = new byte[4];
            din.readFully(stored);
            if (ByteBuffer.wrap(stored).order(ByteOrder.LITTLE_ENDIAN).getInt() != (int) crc.getValue()) {
                throw new FilterFormatException("corrupt header: checksum mismatch");
            }
            if (!(FilterIO.read(in) instanceof KeyStateFilter filter)) {
                throw new FilterFormatException("the filter is not a three-state filter");
            }
            if (in.read() != -1) {
                throw new FilterFormatException("unexpected bytes after the filter");
            }
            return new SSTableKeys(sstableId, filter, tombstones, maxTimestamp);
        } catch (java.io.EOFException e) {
            throw new FilterFormatException(file + ": truncated");
        } catch (FilterFormatException e) {
            throw new FilterFormatException(file + ": " + e.getMessage());
        }
    }
}
