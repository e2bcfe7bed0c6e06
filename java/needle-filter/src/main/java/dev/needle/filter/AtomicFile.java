package dev.needle.filter;

import java.io.BufferedOutputStream;
import java.io.IOException;
import java.io.OutputStream;
import java.nio.channels.Channels;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/** A file replaced as a whole: a crash leaves the old file or the new one, never a mix. */
public final class AtomicFile {
    private static final int BUFFER = 1 << 16;

    private AtomicFile() {}

    /** Writes whatever {@code content} writes. */
    @FunctionalInterface
    public interface StreamWriter {
        void writeTo(OutputStream out) throws IOException;
    }

    /**
     * Writes {@code file} atomically: to a temporary file in the same folder, forced to disk, then
     * renamed over the target.
     */
    public static void write(Path file, StreamWriter content) throws IOException {
        Path dir = file.toAbsolutePath().getParent();
        Files.createDirectories(dir);
        Path tmp = Files.createTempFile(dir, file.getFileName().toString(), ".tmp");
        try {
            try (FileChannel ch =
                            FileChannel.open(tmp, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
                    OutputStream out = new BufferedOutputStream(Channels.newOutputStream(ch), BUFFER)) {
                content.writeTo(out);
                out.flush();
                ch.force(true);
            }
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING);
            }
        } finally {
            Files.deleteIfExists(tmp);
        }
    }
}
