package dev.cohort.runtime;

import dev.cohort.api.LaunchEnvironment;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.BasicFileAttributes;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * The names of the {@code /dev/shm} files that shared-memory groups map: the one place that knows
 * them. The shm engine creates them; a launcher removes those a crashed group left behind.
 *
 * <p>A group's file is {@code cohort-<run id>-<restart count>-<scope>}, where the scope is 12 hex
 * digits of a hash of the user id, {@code MASTER_ADDR} and {@code MASTER_PORT}: a launcher picks
 * a free port per job, so two jobs with the same run id on one host (the default run id is
 * {@value LaunchEnvironment#DEFAULT_RUN_ID}), or two users, never share a name. A job with
 * several shared-memory groups per host (the hierarchical backend's, one per host; hosts may share
 * a {@code /dev/shm}, as network namespaces do) names each with a suffix:
 * {@code cohort-<run id>-<restart count>-<scope>-<group>}.
 */
public final class SharedMemoryFiles {

    /** The tmpfs that holds the mappings. */
    public static final Path DIRECTORY = Path.of("/dev/shm");
    /** Every mapping's file name starts with this. */
    public static final String PREFIX = "cohort-";

    /** What {@link #removeLeftovers} did: the files it removed, and why others could not be. */
    public record Removal(List<Path> removed, List<String> failures) {
        public Removal {
            removed = List.copyOf(removed);
            failures = List.copyOf(failures);
        }
    }

    private SharedMemoryFiles() {}

    /** The files of run {@code runId} still in {@link #DIRECTORY} (what a finished run should not leave). */
    public static List<Path> leftovers(String runId) {
        try (java.util.stream.Stream<Path> files = Files.list(DIRECTORY)) {
            return files.filter(p -> p.getFileName().toString().startsWith(PREFIX + runId + "-"))
                    .toList();
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * The file that the shm group of workers started with {@code env} maps (run id, restart count,
     * and the scope from {@code MASTER_ADDR} and {@code MASTER_PORT}, empty when unset).
     */
    public static Path path(Map<String, String> env) {
        return DIRECTORY.resolve(PREFIX + LaunchEnvironment.parseRunId(env) + "-"
                + LaunchEnvironment.parseRestartCount(env) + "-" + scope(env));
    }

    /**
     * The file of the shared-memory group called {@code group} (1-32 characters of
     * {@code [A-Za-z0-9]}, e.g. {@code host3}) of the workers started with {@code env}.
     */
    public static Path path(Map<String, String> env, String group) {
        if (!group.matches("[A-Za-z0-9]{1,32}")) {
            throw new IllegalArgumentException(
                    "a shared-memory group's name must be 1-32 characters of [A-Za-z0-9], got '" + group + "'");
        }
        return DIRECTORY.resolve(path(env).getFileName() + "-" + group);
    }

    /**
     * Removes from {@code directory} the mapping files of the run that {@code env} describes (with
     * or without a group suffix): same run id, same scope (so the same user, {@code MASTER_ADDR} and {@code MASTER_PORT}), restart
     * count at most {@code env}'s, regular files owned by this process's user. Call it only when
     * no worker of that run on this host is alive: a group still attaching would lose its file.
     */
    public static Removal removeLeftovers(Path directory, Map<String, String> env) {
        Pattern ours = Pattern.compile(Pattern.quote(PREFIX + LaunchEnvironment.parseRunId(env) + "-") + "([0-9]{1,9})"
                + Pattern.quote("-" + scope(env)) + "(-[A-Za-z0-9]{1,32})?");
        int lastRestart = LaunchEnvironment.parseRestartCount(env);
        Optional<Integer> uid = userId();
        List<Path> removed = new ArrayList<>();
        List<String> failures = new ArrayList<>();
        if (uid.isEmpty() || !Files.isDirectory(directory)) {
            return new Removal(removed, failures);
        }
        try (DirectoryStream<Path> files = Files.newDirectoryStream(directory, PREFIX + "*")) {
            for (Path file : files) {
                Matcher m = ours.matcher(file.getFileName().toString());
                if (!m.matches() || Integer.parseInt(m.group(1)) > lastRestart) {
                    continue;
                }
                try {
                    BasicFileAttributes a =
                            Files.readAttributes(file, BasicFileAttributes.class, LinkOption.NOFOLLOW_LINKS);
                    Object owner = Files.getAttribute(file, "unix:uid", LinkOption.NOFOLLOW_LINKS);
                    if (a.isRegularFile() && uid.get().equals(owner)) {
                        Files.delete(file);
                        removed.add(file);
                    }
                } catch (NoSuchFileException gone) {
                    // removed meanwhile (its last rank attached after all)
                } catch (IOException | RuntimeException e) {
                    failures.add(file + ": " + e);
                }
            }
        } catch (IOException e) {
            failures.add("cannot list " + directory + ": " + e);
        }
        return new Removal(removed, failures);
    }

    /** 48 bits of an FNV-1a hash of the user, {@code MASTER_ADDR} and {@code MASTER_PORT}, in hex. */
    private static String scope(Map<String, String> env) {
        String scope = userId().map(String::valueOf).orElseGet(() -> System.getProperty("user.name", "")) + "|"
                + env.getOrDefault(LaunchEnvironment.MASTER_ADDR, "") + "|"
                + env.getOrDefault(LaunchEnvironment.MASTER_PORT, "");
        long h = 0xCBF29CE484222325L;
        for (byte b : scope.getBytes(StandardCharsets.UTF_8)) {
            h = (h ^ (b & 0xFF)) * 0x100000001B3L;
        }
        return String.format("%012x", h & 0xFFFFFFFFFFFFL);
    }

    /** This process's numeric user id, where the file system tells it (Linux). */
    private static Optional<Integer> userId() {
        try {
            return Optional.of((Integer) Files.getAttribute(Path.of("/proc/self"), "unix:uid"));
        } catch (IOException | UnsupportedOperationException | IllegalArgumentException | ClassCastException e) {
            return Optional.empty();
        }
    }
}
