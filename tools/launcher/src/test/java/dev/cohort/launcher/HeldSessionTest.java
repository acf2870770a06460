package dev.cohort.launcher;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeFalse;

import java.io.OutputStream;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A worker runs nothing of its program until the launcher, its orphan guard watching the worker's
 * group, lets it go: a launcher killed between starting a worker and watching it (a SIGKILL that
 * once left a worker running in {@code LauncherCliTest}) leaves no worker behind.
 */
@Timeout(30)
class HeldSessionTest {

    @TempDir
    Path dir;

    private Process start(Path marker) throws Exception {
        List<String> command = new ArrayList<>(ProcessTreeKiller.heldSession());
        command.addAll(List.of("sh", "-c", ": > \"$0\"; echo $$", marker.toString()));
        return new ProcessBuilder(command).redirectErrorStream(true).start();
    }

    @Test
    void aWorkerWhoseLauncherDiedBeforeLettingItGoRunsNothing() throws Exception {
        assumeFalse(ProcessTreeKiller.sessionWrapper().isEmpty(), "setsid is missing");
        Path marker = dir.resolve("ran");
        Process held = start(marker);
        held.getOutputStream().close(); // the launcher gone: its end of the pipe closed, no line sent
        assertThat(held.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(marker).doesNotExist();
    }

    @Test
    void aWorkerLetGoRunsInPlaceLeadingItsOwnGroupWithNoInput() throws Exception {
        assumeFalse(ProcessTreeKiller.sessionWrapper().isEmpty(), "setsid is missing");
        Path marker = dir.resolve("ran");
        Process worker = start(marker);
        try (OutputStream go = worker.getOutputStream()) {
            go.write('\n');
        }
        assertThat(worker.waitFor(10, TimeUnit.SECONDS)).isTrue();
        assertThat(worker.exitValue()).isZero();
        assertThat(marker).exists();
        // The program's shell is the process started: the pid, and so the group the guard kills, stays.
        assertThat(new String(worker.getInputStream().readAllBytes()).strip()).isEqualTo(Long.toString(worker.pid()));
    }
}
