package dev.needle.cassandra.storage;

import dev.needle.cassandra.base.NeedleOptions;
import dev.needle.filter.FilterFormatException;
import dev.needle.filter.FilterIO;
import dev.needle.filter.KeyStateFilter;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.HashMap;
import java.util.Map;
import java.util.Set;
import java.util.zip.CRC32C;
import org.apache.cassandra.db.lifecycle.Tracker;
import org.apache.cassandra.dht.Token;
import org.apache.cassandra.io.sstable.Component;
import org.apache.cassandra.io.sstable.Descriptor;
import org.apache.cassandra.io.sstable.format.SSTableFormat;
import org.apache.cassandra.io.sstable.format.SSTableReader;

/**
 * Needle's knowledge of an SSTable saved as a component of that SSTable, {@code
 * <sstable>-Needle+<index name>.db} beside its Data.db (format: {@code format/sstable-keys-v2.md}).
 * As a component listed in the SSTable's TOC it is hard-linked into snapshots, streamed with the
 * whole SSTable, moved by {@code nodetool import}, and deleted with the SSTable, by Cassandra.
 *
 * <p>The file records facts of the SSTable it was built from (the Data component's length and
 * CRC32 digest, the minimum and maximum timestamps); a file whose facts differ from the SSTable
 * it sits beside (a snapshot restored over a reused generation, a file left behind) is refused
 * and the SSTable is scanned again.
 */
final class FilterComponent {
    private static final int MAGIC = 0x534C444E; // "NDLS"
    static final int VERSION = 2;
    private static final int FIXED = 52;
    private static final int FLAG_TOMBSTONES_COMPLETE = 1;

    final Component component;

    FilterComponent(String indexName) {
        this.component = SSTableFormat.Components.Types.CUSTOM.createComponent("Needle+" + indexName + ".db");
    }

    Path path(Descriptor descriptor) {
        return descriptor.fileFor(component).toPath();
    }

    /** The facts of an SSTable that a saved file must match. */
    record Binding(long dataLength, long dataDigest, long minTimestamp, long maxTimestamp) {
        static Binding of(SSTableReader reader) throws IOException {
            Descriptor d = reader.descriptor;
            long length = Files.size(d.fileFor(SSTableFormat.Components.DATA).toPath());
            long digest = -1;
            Path digestFile = d.fileFor(SSTableFormat.Components.DIGEST).toPath();
            if (Files.exists(digestFile)) {
                String text =
                        Files.readString(digestFile, StandardCharsets.US_ASCII).trim();
                try {
                    digest = Long.parseLong(text);
                } catch (NumberFormatException e) {
                    throw new IOException(digestFile + " does not hold a checksum: '" + text + "'");
                }
            }
            return new Binding(length, digest, reader.getMinTimestamp(), reader.getMaxTimestamp());
        }
    }

    /**
     * Writes the file of {@code reader}'s SSTable, in place (a temporary file beside it would be
     * taken for a component), forced to disk. A torn file fails its checksums when read, and the
     * SSTable is then scanned again.
     */
    void write(SSTableReader reader, SSTableKeys keys) throws IOException {
        Faults.hit("save");
        Binding b = Binding.of(reader);
        int size = FIXED;
        for (ByteBuffer k : keys.tombstones.keySet()) {
            size += 4 + k.remaining() + 16;
        }
        ByteBuffer head = ByteBuffer.allocate(size).order(ByteOrder.LITTLE_ENDIAN);
        head.putInt(MAGIC).putShort((short) VERSION).putShort((short)
                (keys.tombstonesComplete ? FLAG_TOMBSTONES_COMPLETE : 0));
        head.putLong(b.dataLength).putLong(b.dataDigest).putLong(b.minTimestamp).putLong(b.maxTimestamp);
        head.putLong(keys.expiryFloor).putInt(keys.tombstones.size());
        for (Map.Entry<ByteBuffer, Tombstone> e : keys.tombstones.entrySet()) {
            head.putInt(e.getKey().remaining()).put(e.getKey().duplicate());
            head.putLong(e.getValue().markedForDeleteAt()).putLong(e.getValue().localDeletionTime());
        }
        CRC32C crc = new CRC32C();
        crc.update(head.array(), 0, size);
        Path file = path(reader.descriptor);
        try (FileChannel ch = FileChannel.open(
                        file,
                        StandardOpenOption.CREATE,
                        StandardOpenOption.WRITE,
                        StandardOpenOption.TRUNCATE_EXISTING);
                OutputStream out = new BufferedOutputStream(Channels.newOutputStream(ch), 1 << 16)) {
            out.write(head.array(), 0, size);
            out.write(ByteBuffer.allocate(4)
                    .order(ByteOrder.LITTLE_ENDIAN)
                    .putInt((int) crc.getValue())
                    .array());
            keys.filter.writeTo(out);
            out.flush();
            ch.force(true);
        }
    }

    /**
     * Reads the file of {@code reader}'s SSTable and checks that it belongs to it and to an index
     * with these options. Throws {@link NoSuchFileException} when there is none, and {@link
     * FilterFormatException} (naming the file and the reason) when it is damaged or does not match.
     */
    SSTableKeys read(SSTableReader reader, NeedleOptions options) throws IOException {
        Path file = path(reader.descriptor);
        try (InputStream in = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            DataInputStream din = new DataInputStream(in);
            byte[] fixed = in.readNBytes(FIXED);
            if (fixed.length < FIXED) {
                throw new FilterFormatException("truncated header");
            }
            ByteBuffer h = ByteBuffer.wrap(fixed).order(ByteOrder.LITTLE_ENDIAN);
            if (h.getInt() != MAGIC) {
                throw new FilterFormatException("not a Needle SSTable key file");
            }
            int version = h.getShort() & 0xFFFF;
            if (version != VERSION) {
                throw new FilterFormatException(
                        "unsupported version " + version + "; this build reads version " + VERSION);
            }
            int flags = h.getShort() & 0xFFFF;
            Binding saved = new Binding(h.getLong(), h.getLong(), h.getLong(), h.getLong());
            long expiryFloor = h.getLong();
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
            Binding actual = Binding.of(reader);
            if (!saved.equals(actual)) {
                throw new FilterFormatException(
                        "built for another SSTable (" + saved + ") than the one beside it (" + actual + ")");
            }
            if (!(FilterIO.read(in) instanceof KeyStateFilter filter)) {
                throw new FilterFormatException("the filter is not a three-state filter");
            }
            if (filter.tracksDeletions() != options.tracksDeletions()) {
                throw new FilterFormatException("built for a " + (filter.tracksDeletions() ? "cuckoo" : "bloom")
                        + " index, not a " + options.filter.name().toLowerCase(java.util.Locale.ROOT) + " one");
            }
            if (in.read() != -1) {
                throw new FilterFormatException("unexpected bytes after the filter");
            }
            Token first = SSTableKeys.firstToken(reader);
            return new SSTableKeys(
                    filter,
                    tombstones,
                    reader.getMaxTimestamp(),
                    expiryFloor,
                    first,
                    first == null ? null : SSTableKeys.lastToken(reader),
                    (flags & FLAG_TOMBSTONES_COMPLETE) != 0);
        } catch (EOFException e) {
            throw new FilterFormatException(file + ": truncated");
        } catch (FilterFormatException e) {
            throw new FilterFormatException(file + ": " + e.getMessage());
        }
    }

    /** Lists the file in the SSTable's TOC (if it is not yet), so that Cassandra carries it with the SSTable. */
    void register(SSTableReader reader, Tracker tracker) {
        if (!reader.getComponents().contains(component)) {
            reader.registerComponents(Set.of(component), tracker);
        }
    }

    /** The index is dropped: takes the file out of the SSTable's TOC and deletes it. */
    void unregisterAndDelete(SSTableReader reader, Tracker tracker) throws IOException {
        if (reader.getComponents().contains(component)) {
            reader.unregisterComponents(Set.of(component), tracker);
        }
        Files.deleteIfExists(path(reader.descriptor));
    }
}
