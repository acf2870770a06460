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
 *
 * <p>{@link #writeAsync} lets training go on while the file is made durable: the content is written
 * to a staging file in memory ({@code /dev/shm} where there is one) on the calling thread — a
 * snapshot, so the state may change as soon as it returns — and copied into place, flushed and
 * renamed by a background thread. One write is in flight at a time: the next one, or {@link
 * #awaitWrites()}, waits for it and throws its failure.
 */
public final class CheckpointFile {

    private CheckpointFile() {}

    /** Where staging files go: memory where the host has a memory file system. */
    private static final Path STAGING = Files.isDirectory(Path.of("/dev/shm")) && Files.isWritable(Path.of("/dev/shm"))
            ? Path.of("/dev/shm")
            : Path.of(System.getProperty("java.io.tmpdir"));

    private static final java.util.concurrent.ExecutorService BACKGROUND =
            java.util.concurrent.Executors.newSingleThreadExecutor(r -> {
                Thread t = new Thread(r, "cohort-checkpoint-writer");
                t.setDaemon(true);
                return t;
            });

    /** The write in flight, if any. */
    private static java.util.concurrent.Future<?> inFlight;

    /**
     * Writes {@code file} as {@link #write} does, the last part in the background: {@code writer}
     * writes a staging file now (the caller's pause), and a background thread copies it into place
     * atomically and durably. Waits for the write before it first ({@link #awaitWrites()}).
     *
     * @throws UncheckedIOException when the staging file cannot be written, or the write before failed
     */
    public static synchronized void writeAsync(Path file, Writer writer) {
        awaitWrites();
        Path staging;
        try {
            staging = Files.createTempFile(STAGING, "cohort-" + file.getFileName() + "-", ".staging");
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot stage checkpoint " + file + " in " + STAGING + ": " + e.getMessage(), e);
        }
        try {
            writer.writeTo(staging);
        } catch (IOException | RuntimeException e) {
            deleteQuietly(staging);
            throw e instanceof IOException io
                    ? new UncheckedIOException("saving checkpoint " + file + " failed: " + io.getMessage(), io)
                    : (RuntimeException) e;
        }
        inFlight = BACKGROUND.submit(() -> {
            try {
                write(file, tmp -> Files.copy(staging, tmp, StandardCopyOption.REPLACE_EXISTING));
            } finally {
                deleteQuietly(staging);
            }
        });
    }

    /**
     * Waits until the write {@link #writeAsync} left in flight is durable (at once where there is
     * none); throws its failure, once.
     *
     * @throws UncheckedIOException naming the file that could not be written
     */
    public static synchronized void awaitWrites() {
        java.util.concurrent.Future<?> pending = inFlight;
        if (pending == null) {
            return;
        }
        inFlight = null;
        try {
            pending.get();
        } catch (java.util.concurrent.ExecutionException e) {
            Throwable cause = e.getCause();
            if (cause instanceof RuntimeException r) {
                throw r;
            }
            throw new IllegalStateException("a background checkpoint write failed: " + cause, cause);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted waiting for a background checkpoint write", e);
        }
    }

    private static void deleteQuietly(Path file) {
        try {
            Files.deleteIfExists(file);
        } catch (IOException ignored) {
            // a staging file in memory or a temporary folder: the system cleans it up
        }
    }

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
