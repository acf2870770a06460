package dev.cohort.examples;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.launcher.Console;
import dev.cohort.launcher.LaunchOptions;
import dev.cohort.launcher.LaunchResult;
import dev.cohort.launcher.Launcher;
import dev.cohort.launcher.WorkerProgram;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Optional;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;
import org.junit.jupiter.api.Timeout;

/**
 * {@code cohort run --elastic 2} with three workers, one of which dies at step 20 of 60: the two
 * others re-form the group in their own processes (same pids, no restart, no checkpoint), go on
 * from the step that failed with the right sums at world 2, and the run succeeds.
 */
class ElasticRunTest {

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"tcp", "gloo", "shm", "hier"})
    @Timeout(180)
    void survivorsReformWithoutARestartAndFinish(String engine) throws Exception {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        PrintStream out = new PrintStream(bytes, true, StandardCharsets.UTF_8);
        LaunchOptions options = LaunchOptions.builder().nprocPerNode(3).masterPort(0).elastic(2)
                .secret(Optional.of(dev.cohort.runtime.auth.JobSecret.generate())).build();
        WorkerProgram program = WorkerProgram.mainClass(ElasticWorker.class.getName(), List.of(engine, "60", "20", "1"));
        LaunchResult result;
        try (Launcher launcher = new Launcher(options, program).console(new Console(out, out))) {
            result = launcher.run();
        }
        String log = bytes.toString(StandardCharsets.UTF_8);
        System.out.println(log);
        assertThat(result.exitCode()).as(log).isZero();
        assertThat(log).contains("DYING worker 1", "go on as generation 1 of the group (elastic)")
                .doesNotContain("restarting the group");
        for (String survivor : List.of("0", "2")) {
            String started = find(log, "START worker " + survivor + " pid (\\d+)");
            String done = find(log, "DONE worker " + survivor + " pid (\\d+) generation 1 world 2 steps 60");
            assertThat(done).as("worker %s kept its process:\n%s", survivor, log).isEqualTo(started);
            assertThat(log).containsPattern("REFORMED worker " + survivor + " generation 1 rank \\d of 2 at step 20, "
                    + "root's 20");
        }
    }

    private static String find(String log, String regex) {
        Matcher m = Pattern.compile(regex).matcher(log);
        assertThat(m.find()).as("'%s' in:\n%s", regex, log).isTrue();
        return m.group(1);
    }
}
