package dev.cohort.launcher;

import java.io.IOException;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;

/**
 * The width of the launcher's terminal, so that the live progress line never wraps (a wrapped line
 * cannot be redrawn in place): {@code $COLUMNS} when exported, else what {@code stty size} says of
 * the controlling terminal, else {@value #FALLBACK}.
 *
 * <p>Not progressbar's own terminal lookup: it goes through JLine, which on JDK 22+ loads a native
 * library and makes the JVM print warnings about restricted methods.
 */
final class TerminalWidth {

    static final int FALLBACK = 80;
    private static final long STTY_MILLIS = 1000;

    private TerminalWidth() {}

    static int columns() {
        Integer fromEnv = parse(System.getenv("COLUMNS"));
        if (fromEnv != null) {
            return fromEnv;
        }
        Integer fromStty = stty();
        return fromStty != null ? fromStty : FALLBACK;
    }

    /** The number in {@code text} when it is a plausible width, else null. */
    static Integer parse(String text) {
        if (text == null) {
            return null;
        }
        try {
            int n = Integer.parseInt(text.trim());
            return n >= 20 && n <= 1000 ? n : null;
        } catch (NumberFormatException e) {
            return null;
        }
    }

    // `stty size` prints "ROWS COLUMNS" for the terminal on its standard input.
    private static Integer stty() {
        try {
            Process p = new ProcessBuilder("sh", "-c", "stty size < /dev/tty")
                    .redirectError(ProcessBuilder.Redirect.DISCARD)
                    .start();
            p.getOutputStream().close();
            if (!p.waitFor(STTY_MILLIS, TimeUnit.MILLISECONDS)) {
                p.destroyForcibly();
                return null;
            }
            String text;
            try (InputStream in = p.getInputStream()) {
                text = new String(in.readAllBytes(), StandardCharsets.US_ASCII).trim();
            }
            String[] parts = text.split("\\s+");
            return p.exitValue() == 0 && parts.length == 2 ? parse(parts[1]) : null;
        } catch (IOException e) {
            return null;
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
            return null;
        }
    }
}
