package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.StringWriter;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The cohort command's conventions: --version and --help everywhere, bad input as one line and exit 2. */
@Timeout(30)
class CohortCommandTest {

    private final Cli cli = new Cli();
    private final StringWriter out = cli.out;
    private final StringWriter err = cli.err;

    private int run(String... args) {
        return cli.run(args);
    }

    @Test
    void versionOnTheCommandAndEverySubcommandSaysTheVersionJvmAndEngines() {
        for (String[] args : new String[][] {
            {"--version"},
            {"run", "--version"},
            {"bench", "--version"},
            {"bench", "collectives", "--version"},
            {"bench", "train", "--version"}
        }) {
            out.getBuffer().setLength(0);
            assertThat(run(args)).as(String.join(" ", args)).isZero();
            assertThat(out.toString())
                    .startsWith("cohort ")
                    .contains("JVM: " + Runtime.version())
                    .contains("engines on the class path: ")
                    .contains("gloo");
        }
    }

    @Test
    void helpOnEverySubcommand() {
        for (String sub : new String[] {"run", "bench", "completion"}) {
            out.getBuffer().setLength(0);
            assertThat(run(sub, "--help")).isZero();
            assertThat(out.toString()).contains("Usage: cohort " + sub);
        }
    }

    @Test
    void badInputIsOneLineAndExitTwo() {
        assertThat(run("bench", "collectives", "--world", "x")).isEqualTo(2);
        assertThat(err.toString())
                .isEqualTo("cohort bench collectives: Invalid value for option '--world': 'x' is not an int"
                        + System.lineSeparator() + "see cohort bench collectives --help" + System.lineSeparator());
        err.getBuffer().setLength(0);
        assertThat(run("nonsense")).isEqualTo(2);
        assertThat(err.toString())
                .startsWith("cohort: Unmatched argument at index 0: 'nonsense'")
                .doesNotContain("\tat ");
        err.getBuffer().setLength(0);
        assertThat(run("run", "--nnodes", "two", "--", "sh")).isEqualTo(2);
        assertThat(err.toString()).contains("--nnodes").doesNotContain("\tat ");
    }

    @Test
    void completionIsABashScriptForTheWholeTree() {
        assertThat(run("completion")).isZero();
        assertThat(out.toString()).contains("complete -F").contains("bench").contains("--nproc-per-node");
    }
}
