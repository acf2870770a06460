package dev.cohort.api.checkpoint;

import dev.cohort.api.steps.CheckpointEvent;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.file.AtomicMoveNotSupportedException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;

/**
 * Writes a checkpoint so that it is either wholly there or not at all, also across a power loss:
 * the content goes to a temporary file beside the target, which is flushed to disk, renamed over
 * the target in one step, and the directory flushed after the rename. A crash at any point leaves
 * the previous checkpoint (or none), never a torn one.
 */
public final class CheckpointFile {

    private CheckpointFile() {}

    /** Writes the content of a checkpoint into the file it is given. */
    @FunctionalInterface
    public interface Writer {
        void writeTo(Path file) throws IOException;
    }

    /** Writes {@code file} through {@code writer} atomically and durably (see the class comment). */
    public static void write(Path file, Writer writer) {
        CheckpointEvent saving = CheckpointEvent.of("save", file);
        Path dir = file.toAbsolutePath().getParent();
        Path tmp = dir.resolve(
                file.getFileName() + ".tmp-" + ProcessHandle.current().pid());
        try {
            Files.createDirectories(dir);
            writer.writeTo(tmp);
            try (FileChannel channel = FileChannel.open(tmp, StandardOpenOption.WRITE)) {
                channel.force(true);
            }
            try {
                Files.move(tmp, file, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
            } catch (AtomicMoveNotSupportedException e) {
                throw new IOException(
                        "cannot rename atomically into " + dir + "; keep checkpoints on a local or POSIX filesystem",
                        e);
            }
            syncDirectory(dir);
            saving.done();
        } catch (IOException e) {
            throw new UncheckedIOException("saving checkpoint " + file + " failed: " + e.getMessage(), e);
        } finally {
            try {
                Files.deleteIfExists(tmp);
            } catch (IOException ignored) {
                // the rename took it, or it was never written
            }
        }
    }

    /** Flushes the directory entry of the rename; where a filesystem cannot open a directory for that, the rename stands unflushed. */
    private static void syncDirectory(Path dir) {
        try (FileChannel channel = FileChannel.open(dir, StandardOpenOption.READ)) {
            channel.force(true);
        } catch (IOException e) {
            // Not every platform opens directories (Windows); the file itself was flushed before the rename.
        }
    }
}
