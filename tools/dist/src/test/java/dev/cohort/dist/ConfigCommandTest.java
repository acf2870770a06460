package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cohort config init} writes every option of cohort run and of the engines, commented out;
 * {@code cohort config show} (in a process of its own, with an environment and a file) says what
 * each sets and which keys name no option.
 */
@Timeout(60)
class ConfigCommandTest {

    private final Cli cli = new Cli();

    @TempDir
    Path dir;

    @Test
    void initWritesEveryOptionCommentedOutAndKeepsAFileThatIsThere() throws Exception {
        Path file = dir.resolve("cohort.properties");
        assertThat(cli.run("config", "init", file.toString()))
                .as(cli.err.toString())
                .isZero();
        String text = Files.readString(file);
        Properties p = new Properties();
        p.load(new java.io.StringReader(text));
        assertThat(p).isEmpty(); // nothing set until the user uncomments it
        assertThat(text)
                .contains("## cohort run", "## engine tcp", "## engine gloo")
                .contains("# --nproc-per-node N|auto: workers on this node")
                .contains("(environment: COHORT_NPROC_PER_NODE)\n#nproc-per-node=1\n")
                .contains("(environment: COHORT_TCP_TIMEOUT)\n#tcp-timeout=300\n");
        // Uncommented, every key is an option `show` knows.
        Properties all = new Properties();
        all.load(new java.io.StringReader(text.replaceAll("(?m)^#([a-z])", "$1")));
        assertThat(all.stringPropertyNames()).contains("gloo-timeout", "shm-timeout", "max-restarts");

        assertThat(cli.run("config", "init", file.toString())).isEqualTo(2);
        assertThat(cli.err.toString()).contains(file + " exists; give --force to replace it");
        assertThat(cli.run("config", "init", "--force", file.toString())).isZero();
    }

    @Test
    void showSaysWhereEachSettingComesFrom() throws Exception {
        Path file = Files.writeString(dir.resolve("job.properties"), "gloo-timeout=45\nnproc-per-node=3\nepoch=2\n");
        List<String> cmd = new ArrayList<>(List.of(
                "env",
                "COHORT_CONFIG=" + file,
                "COHORT_NPROC_PER_NODE=2",
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                System.getProperty("java.class.path"),
                CohortCommand.class.getName(),
                "config",
                "show"));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), java.nio.charset.StandardCharsets.UTF_8);
        assertThat(p.waitFor(30, TimeUnit.SECONDS)).isTrue();
        assertThat(p.exitValue()).as(out).isZero();
        assertThat(out)
                .contains("configuration file: " + file)
                .contains("--nproc-per-node = 2   (COHORT_NPROC_PER_NODE in the environment; cohort run)")
                .contains("--gloo-timeout = 45   (gloo-timeout in " + file + "; engine gloo)")
                .contains("not options of cohort run or of an engine (a program's own options are not known here): "
                        + "epoch");
    }
}
