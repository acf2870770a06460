package dev.cohort.runtime.auth;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.PosixFilePermission;
import java.nio.file.attribute.PosixFilePermissions;
import java.security.SecureRandom;
import java.util.HexFormat;
import java.util.Map;
import java.util.Optional;
import java.util.Set;

/**
 * The secret every process of one job shares, and nobody else knows: each connection between
 * them proves it with a {@link Handshake} before any other byte is read. It comes from
 * {@value #ENV} (the secret itself) or {@value #FILE_ENV} (a file holding it); {@code cohort run}
 * generates one for its workers when neither is set.
 */
public final class JobSecret {

    /** The secret itself, at least {@value #MIN_CHARS} characters. */
    public static final String ENV = "COHORT_SECRET";
    /** A file whose first line is the secret. */
    public static final String FILE_ENV = "COHORT_SECRET_FILE";

    static final int MIN_CHARS = 16;
    private static final System.Logger LOG = System.getLogger(JobSecret.class.getName());
    private static volatile Optional<JobSecret> ofProcess;

    private final byte[] key;

    private JobSecret(byte[] key) {
        this.key = key;
    }

    /**
     * This process's secret, read once from its environment ({@value #ENV}, else {@value #FILE_ENV}).
     *
     * @throws IllegalArgumentException when the variable is set but holds no usable secret
     */
    public static Optional<JobSecret> ofProcess() {
        Optional<JobSecret> s = ofProcess;
        if (s == null) {
            synchronized (JobSecret.class) {
                if (ofProcess == null) {
                    ofProcess = from(System.getenv());
                }
                s = ofProcess;
            }
        }
        return s;
    }

    /** The secret an environment names, if any. */
    public static Optional<JobSecret> from(Map<String, String> env) {
        String text = env.get(ENV);
        if (text != null && !text.isEmpty()) {
            return Optional.of(of(text, ENV));
        }
        String file = env.get(FILE_ENV);
        if (file != null && !file.isEmpty()) {
            return Optional.of(read(Path.of(file)));
        }
        return Optional.empty();
    }

    /** A new random secret (256 bits, as 64 hex digits). */
    public static JobSecret generate() {
        byte[] bits = new byte[32];
        new SecureRandom().nextBytes(bits);
        return of(HexFormat.of().formatHex(bits), "a generated secret");
    }

    /** The secret {@code text} (its UTF-8 bytes are the key). */
    public static JobSecret of(String text) {
        return of(text, "the secret");
    }

    private static JobSecret of(String text, String from) {
        String t = text.strip();
        if (t.length() < MIN_CHARS) {
            throw new IllegalArgumentException(from + " is " + t.length() + " characters long; a job secret needs "
                    + MIN_CHARS + " or more (e.g. `openssl rand -hex 32`)");
        }
        return new JobSecret(t.getBytes(StandardCharsets.UTF_8));
    }

    /**
     * The secret in the first line of {@code file}. Warns when other users may read the file.
     *
     * @throws IllegalArgumentException naming the file when it cannot be read or holds no usable secret
     */
    public static JobSecret read(Path file) {
        String text;
        try {
            text = Files.readString(file, StandardCharsets.UTF_8)
                    .lines()
                    .findFirst()
                    .orElse("");
        } catch (IOException e) {
            throw new IllegalArgumentException(
                    "cannot read the job secret from " + file + ": " + e.getMessage() + " (" + FILE_ENV
                            + " / --secret-file must name a readable file)",
                    e);
        }
        try {
            Set<PosixFilePermission> mode = Files.getPosixFilePermissions(file);
            if (mode.stream()
                    .anyMatch(p -> p.name().startsWith("GROUP") || p.name().startsWith("OTHERS"))) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        "the job secret file " + file + " can be read by other users ("
                                + PosixFilePermissions.toString(mode) + "); chmod 600 it");
            }
        } catch (IOException | UnsupportedOperationException e) {
            // not a POSIX file system: nothing to check
        }
        return of(text, "the secret in " + file);
    }

    /**
     * Logs, once per process, that a job without a secret whose ranks meet at {@code masterAddr}
     * (not loopback) can be joined by anyone who reaches it, and how to add a secret.
     */
    public static void warnIfExposed(String masterAddr) {
        boolean loopback;
        try {
            loopback = java.net.InetAddress.getByName(masterAddr).isLoopbackAddress();
        } catch (IOException e) {
            loopback = false;
        }
        if (!loopback && !warned) {
            warned = true;
            LOG.log(
                    System.Logger.Level.WARNING,
                    "this job has no secret: any process that reaches " + masterAddr
                            + " can take part in it. Give every process the same secret: cohort run --secret-file FILE (create "
                            + "it with `(umask 077; openssl rand -hex 32 > FILE)`), or set " + ENV + " or " + FILE_ENV
                            + " (see docs/SECURITY.md)");
        }
    }

    private static volatile boolean warned;

    /** Writes the secret to {@code file}, readable by its owner only. */
    public void writeTo(Path file) {
        try {
            Files.deleteIfExists(file);
            Files.createFile(file, PosixFilePermissions.asFileAttribute(PosixFilePermissions.fromString("rw-------")));
            Files.write(file, (text() + "\n").getBytes(StandardCharsets.UTF_8), StandardOpenOption.TRUNCATE_EXISTING);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the job secret to " + file, e);
        }
    }

    /** The secret as {@value #ENV} holds it, to pass to processes of the same job. */
    public String text() {
        return new String(key, StandardCharsets.UTF_8);
    }

    byte[] key() {
        return key;
    }

    /** Never the secret itself. */
    @Override
    public String toString() {
        return "job secret";
    }
}
