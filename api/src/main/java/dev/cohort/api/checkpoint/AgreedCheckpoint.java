package dev.cohort.api.checkpoint;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ObjectCollectives;
import dev.cohort.api.collective.ProcessGroup;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import java.util.zip.CRC32C;

/**
 * The checkpoint every rank resumes from, agreed over the group, for ranks that do not share a file
 * system (each node's own disk) as well as for those that do. Each rank lists the checkpoints in
 * its directory; the ranks take the newest that any of them holds (a checkpoint file is only ever
 * there whole: {@link CheckpointFile}); every rank then compares the files of that checkpoint it
 * holds — the file and those beside it that extend its name, such as a sharded optimizer's
 * {@code <file>.optimizer-<step>.<rank>-of-<world>} — by size and CRC32C with the other ranks'
 * copies, and a rank that lacks one receives it over the group from the lowest rank that has it,
 * written atomically into its directory. On return every rank has every file of the checkpoint.
 *
 * <p>A collective: every rank of the group calls it at the same point, each with its own
 * directory. The directories must hold this job's checkpoints only: the newest of any rank wins.
 */
public final class AgreedCheckpoint {

    /** The bytes moved in one broadcast while a file is sent to the ranks that lack it. */
    static final int CHUNK = 16 << 20;

    private static final Pattern TEMPORARY = Pattern.compile(".*\\.tmp-\\d+");

    private AgreedCheckpoint() {}

    /**
     * The newest checkpoint any rank of {@code group} holds in its {@code dir}, with its files
     * brought to every rank that lacked them; empty on every rank when none holds one.
     *
     * @param name the checkpoint files' names, the step number as its first group, e.g. {@code
     *     checkpoint-step-(\d+)\.pt}
     * @throws IllegalStateException when two ranks hold different copies of one file (naming the
     *     file and the ranks): one is corrupt, or from another job
     * @throws UncheckedIOException when a directory cannot be read or a file written
     */
    public static Optional<Path> newest(ProcessGroup group, Path dir, Pattern name) {
        Optional<Path> mine = newestHere(dir, name);
        long[] steps = new long[group.size()];
        long[] step = {mine.map(p -> step(p, name)).orElse(-1L)};
        group.allgather(DenseBuffer.of(step), DenseBuffer.of(steps)).await();
        int holder = 0;
        for (int r = 1; r < steps.length; r++) {
            if (steps[r] > steps[holder]) {
                holder = r;
            }
        }
        if (steps[holder] < 0) {
            return Optional.empty();
        }
        // The name itself, from the rank that holds the newest (the pattern may allow several spellings of one step).
        String main = new String(
                ObjectCollectives.broadcastBytes(
                        group,
                        group.rank() == holder
                                ? mine.orElseThrow().getFileName().toString().getBytes(StandardCharsets.UTF_8)
                                : null,
                        holder),
                StandardCharsets.UTF_8);
        Map<String, Copy> held = filesHere(dir, main);
        List<Map<String, Copy>> everyones = new ArrayList<>();
        for (byte[] listing : ObjectCollectives.allgatherBytes(group, encode(held))) {
            everyones.add(decode(listing));
        }
        Map<String, Copy> agreed = agree(everyones, main);
        for (var e : agreed.entrySet()) {
            int source = -1;
            boolean someoneLacks = false;
            for (int r = 0; r < everyones.size(); r++) {
                if (everyones.get(r).containsKey(e.getKey())) {
                    source = source < 0 ? r : source;
                } else {
                    someoneLacks = true;
                }
            }
            if (someoneLacks) {
                send(group, dir.resolve(e.getKey()), e.getValue(), source, !held.containsKey(e.getKey()));
            }
        }
        return Optional.of(dir.resolve(main));
    }

    /** This rank's newest checkpoint in {@code dir}, if any. */
    private static Optional<Path> newestHere(Path dir, Pattern name) {
        if (!Files.isDirectory(dir)) {
            return Optional.empty();
        }
        try (Stream<Path> files = Files.list(dir)) {
            return files.filter(p -> name.matcher(p.getFileName().toString()).matches())
                    .max(java.util.Comparator.comparingLong(p -> step(p, name)));
        } catch (IOException e) {
            throw new UncheckedIOException("listing checkpoints in " + dir + " failed: " + e.getMessage(), e);
        }
    }

    private static long step(Path file, Pattern name) {
        Matcher m = name.matcher(file.getFileName().toString());
        if (!m.matches() || m.groupCount() < 1) {
            throw new IllegalArgumentException(
                    "the checkpoints' pattern " + name + " must capture the step number as its first group");
        }
        return Long.parseLong(m.group(1));
    }

    /** A file's size and CRC32C. */
    record Copy(long size, long crc) {}

    /** The files of checkpoint {@code main} this rank holds in {@code dir}: it, and those beside it that extend its name. */
    private static Map<String, Copy> filesHere(Path dir, String main) {
        Map<String, Copy> files = new TreeMap<>();
        if (!Files.isDirectory(dir)) {
            return files;
        }
        try (Stream<Path> list = Files.list(dir)) {
            for (Path p : list.toList()) {
                String n = p.getFileName().toString();
                if ((n.equals(main) || n.startsWith(main + "."))
                        && !TEMPORARY.matcher(n).matches()
                        && Files.isRegularFile(p)) {
                    files.put(n, copyOf(p));
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("reading checkpoint " + dir.resolve(main) + " failed: " + e.getMessage(), e);
        }
        return files;
    }

    private static Copy copyOf(Path file) throws IOException {
        CRC32C crc = new CRC32C();
        long size = 0;
        byte[] buffer = new byte[1 << 16];
        try (InputStream in = Files.newInputStream(file)) {
            for (int n; (n = in.read(buffer)) > 0; ) {
                crc.update(buffer, 0, n);
                size += n;
            }
        }
        return new Copy(size, crc.getValue());
    }

    /** Every file some rank holds, once each ranks' copies are known to be the same. */
    private static Map<String, Copy> agree(List<Map<String, Copy>> everyones, String main) {
        Map<String, Copy> agreed = new TreeMap<>();
        Map<String, Integer> firstHolder = new TreeMap<>();
        for (int r = 0; r < everyones.size(); r++) {
            for (var e : everyones.get(r).entrySet()) {
                Copy first = agreed.putIfAbsent(e.getKey(), e.getValue());
                firstHolder.putIfAbsent(e.getKey(), r);
                if (first != null && !first.equals(e.getValue())) {
                    throw new IllegalStateException("checkpoint " + main + ": rank " + firstHolder.get(e.getKey())
                            + "'s and rank " + r + "'s copies of " + e.getKey() + " differ (" + describe(first)
                            + " against " + describe(e.getValue()) + "): one is corrupt or from another job; "
                            + "remove the wrong one and resume again");
                }
            }
        }
        return agreed;
    }

    private static String describe(Copy c) {
        return c.size() + " bytes, CRC32C " + Long.toHexString(c.crc());
    }

    /**
     * Sends {@code file} from {@code source} to the ranks that lack it, in chunks; those ({@code
     * lacking}) write it atomically and check it against {@code expected}; the others pass.
     */
    private static void send(ProcessGroup group, Path file, Copy expected, int source, boolean lacking) {
        long chunks = (expected.size() + CHUNK - 1) / CHUNK;
        if (lacking) {
            CheckpointFile.write(file, tmp -> {
                CRC32C crc = new CRC32C();
                long got = 0;
                try (OutputStream out = Files.newOutputStream(tmp)) {
                    for (long i = 0; i < chunks; i++) {
                        byte[] moved = ObjectCollectives.broadcastBytes(group, null, source);
                        out.write(moved);
                        crc.update(moved);
                        got += moved.length;
                    }
                }
                Copy received = new Copy(got, crc.getValue());
                if (!received.equals(expected)) {
                    throw new IOException("received " + describe(received) + " from rank " + source + ", expected "
                            + describe(expected));
                }
            });
            return;
        }
        boolean sending = group.rank() == source;
        try (InputStream in = sending ? Files.newInputStream(file) : null) {
            for (long i = 0; i < chunks; i++) {
                byte[] chunk = sending ? in.readNBytes((int) Math.min(CHUNK, expected.size() - i * CHUNK)) : null;
                ObjectCollectives.broadcastBytes(group, chunk, source);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("sending checkpoint file " + file + " failed: " + e.getMessage(), e);
        }
    }

    private static byte[] encode(Map<String, Copy> files) {
        StringBuilder s = new StringBuilder();
        files.forEach((n, c) -> s.append(n)
                .append('\t')
                .append(c.size())
                .append('\t')
                .append(c.crc())
                .append('\n'));
        return s.toString().getBytes(StandardCharsets.UTF_8);
    }

    private static Map<String, Copy> decode(byte[] listing) {
        Map<String, Copy> files = new TreeMap<>();
        for (String line : new String(listing, StandardCharsets.UTF_8).split("\n")) {
            if (!line.isEmpty()) {
                String[] f = line.split("\t");
                files.put(f[0], new Copy(Long.parseLong(f[1]), Long.parseLong(f[2])));
            }
        }
        return files;
    }
}
