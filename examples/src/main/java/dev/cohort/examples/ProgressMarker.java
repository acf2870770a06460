package dev.cohort.examples;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.util.Locale;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * How far a training run has got, kept next to its checkpoints (file {@value #FILE_NAME}) so that a
 * run restarted after a crash knows which steps it redoes: the highest step any attempt completed,
 * and how many step executions so far were repeats.
 *
 * <p>The root worker rewrites it after every step: one positional write of a fixed-length line into
 * a file it keeps open (no fsync, no rename), so it costs one system call per step. A write of a few
 * bytes is not torn by the death of the process (SIGKILL), which is what it must survive; after a
 * machine crash it may be lost or unreadable, and then the count of redone steps starts again at 0.
 */
final class ProgressMarker implements AutoCloseable {

    static final String FILE_NAME = "progress";
    private static final Pattern LINE = Pattern.compile("reached_step (\\d+) steps_redone (\\d+)\\n");

    /**
     * @param reachedStep the highest step completed by any attempt of the run
     * @param stepsRedone step executions that repeated a step completed before (by an earlier attempt)
     */
    record State(long reachedStep, long stepsRedone) {

        static final State START = new State(0, 0);

        /** After step {@code step} was completed (again, when it is not above {@link #reachedStep}). */
        State completed(long step) {
            return step <= reachedStep ? new State(reachedStep, stepsRedone + 1) : new State(step, stepsRedone);
        }

        String line() {
            return String.format(Locale.ROOT, "reached_step %019d steps_redone %019d\n", reachedStep, stepsRedone);
        }
    }

    private final Path file;
    private final FileChannel channel;

    private ProgressMarker(Path file, FileChannel channel) {
        this.file = file;
        this.channel = channel;
    }

    /** The marker in {@code dir}; empty when there is none, or when it is unreadable (said on {@code warn}). */
    static Optional<State> read(Path dir, java.io.PrintStream warn) {
        Path file = dir.resolve(FILE_NAME);
        String text;
        try {
            text = Files.readString(file, StandardCharsets.US_ASCII);
        } catch (NoSuchFileException e) {
            return Optional.empty();
        } catch (IOException e) {
            warn.println(
                    "fashion-mnist: cannot read " + file + " (" + e.getMessage() + "); counting redone steps from 0");
            return Optional.empty();
        }
        Matcher m = LINE.matcher(text);
        if (!m.matches()) {
            warn.println("fashion-mnist: " + file + " is not a progress marker; counting redone steps from 0");
            return Optional.empty();
        }
        return Optional.of(new State(Long.parseLong(m.group(1)), Long.parseLong(m.group(2))));
    }

    /** Opens (creating) the marker in {@code dir} and writes {@code state}. */
    static ProgressMarker open(Path dir, State state) {
        Path file = dir.resolve(FILE_NAME);
        try {
            Files.createDirectories(dir);
            FileChannel channel = FileChannel.open(
                    file, StandardOpenOption.CREATE, StandardOpenOption.WRITE, StandardOpenOption.TRUNCATE_EXISTING);
            ProgressMarker marker = new ProgressMarker(file, channel);
            marker.write(state);
            return marker;
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the progress marker " + file + ": " + e.getMessage(), e);
        }
    }

    /** Overwrites the marker with {@code state}. */
    void write(State state) {
        ByteBuffer bytes = ByteBuffer.wrap(state.line().getBytes(StandardCharsets.US_ASCII));
        try {
            long position = 0;
            while (bytes.hasRemaining()) {
                position += channel.write(bytes, position);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the progress marker " + file + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() {
        try {
            channel.close();
        } catch (IOException e) {
            // Nothing was buffered: every write went to the file already.
        }
    }
}
