package dev.cohort.launcher;

import java.io.IOException;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.List;

/**
 * Kills the workers' process groups if the launcher dies without running its shutdown hook
 * (SIGKILL, the OOM killer). A small shell process in its own session reads "+GROUP" and
 * "-GROUP" lines from a pipe whose only writer is this JVM; at end of input (this JVM gone, or
 * {@link #close()}) it SIGKILLs every group still listed. It ignores SIGINT, SIGTERM and SIGHUP,
 * so a Ctrl-C that reaches it together with the launcher cannot end it first.
 *
 * <p>Where {@code sh} or {@code setsid} is missing, {@link #start()} returns a guard that does
 * nothing; the shutdown hook still covers every other way the launcher ends.
 */
final class OrphanGuard implements AutoCloseable {

    private static final String SCRIPT = "trap '' INT TERM HUP; groups=' '; "
            + "while read -r line; do case \"$line\" in "
            + "+*) groups=\"$groups${line#+} \";; "
            + "-*) groups=$(printf '%s' \"$groups\" | sed \"s/ ${line#-} / /\");; "
            + "esac; done; "
            + "for g in $groups; do kill -s KILL -- \"-$g\" 2>/dev/null; done; exit 0";

    private final Process process;
    private final OutputStream pipe;

    private OrphanGuard(Process process) {
        this.process = process;
        this.pipe = process == null ? null : process.getOutputStream();
    }

    static OrphanGuard start() {
        List<String> setsid = ProcessTreeKiller.sessionWrapper();
        if (setsid.isEmpty()) {
            return new OrphanGuard(null);
        }
        List<String> cmd = new ArrayList<>(setsid);
        cmd.addAll(List.of("sh", "-c", SCRIPT));
        try {
            return new OrphanGuard(new ProcessBuilder(cmd)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .redirectError(ProcessBuilder.Redirect.DISCARD)
                    .start());
        } catch (IOException e) {
            return new OrphanGuard(null);
        }
    }

    void watch(long processGroup) {
        send("+" + processGroup);
    }

    void forget(long processGroup) {
        send("-" + processGroup);
    }

    private synchronized void send(String line) {
        if (pipe == null) {
            return;
        }
        try {
            pipe.write((line + "\n").getBytes(StandardCharsets.US_ASCII));
            pipe.flush();
        } catch (IOException e) {
            // The guard died; the shutdown hook still stops the workers on an orderly exit.
        }
    }

    /** Ends the guard; it kills whatever groups are still listed. */
    @Override
    public synchronized void close() {
        if (pipe == null) {
            return;
        }
        try {
            pipe.close();
        } catch (IOException e) {
            // Already closed.
        }
        try {
            process.waitFor(2, java.util.concurrent.TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
