package dev.cohort.djl;

import ai.djl.engine.Engine;
import ai.djl.util.Utils;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;

/**
 * Loads a DJL engine safely when several ranks start at once on one host. DJL unpacks an engine's
 * bundled natives into its cache on first use, and a process that finds the directory incomplete
 * deletes and re-creates it — under another process that is loading from it. So the first load
 * is serialized between processes with a file lock in DJL's cache directory ({@code
 * DJL_CACHE_DIR}, else {@code ~/.djl.ai}); after it, loads take no lock.
 */
public final class DjlEngines {

    /** How long a process waits for another one to finish unpacking. */
    static final Duration LOCK_TIMEOUT = Duration.ofMinutes(5);

    private DjlEngines() {}

    /**
     * {@link Engine#getEngine(String)}, its first load in this process under the cache's file lock.
     *
     * @throws UncheckedIOException when the lock cannot be had within five minutes, naming its file
     */
    public static synchronized Engine load(String engineName) {
        Path cache = Utils.getCacheDir();
        try {
            Files.createDirectories(cache);
            Path lockFile = cache.resolve(".cohort-engine.lock");
            try (FileChannel channel =
                    FileChannel.open(lockFile, StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
                long deadline = System.nanoTime() + LOCK_TIMEOUT.toNanos();
                FileLock lock;
                while ((lock = channel.tryLock()) == null) {
                    if (System.nanoTime() > deadline) {
                        throw new IOException("another process held " + lockFile + " for more than " + LOCK_TIMEOUT
                                + " while loading a DJL engine");
                    }
                    Thread.sleep(50);
                }
                try {
                    return Engine.getEngine(engineName);
                } finally {
                    lock.release();
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("loading DJL's " + engineName + " engine: " + e.getMessage(), e);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            throw new IllegalStateException("interrupted while waiting to load DJL's " + engineName + " engine", e);
        }
    }
}
