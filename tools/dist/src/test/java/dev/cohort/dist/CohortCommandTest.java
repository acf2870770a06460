package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** The cohort command's conventions: --version and --help everywhere, bad input as one line and exit 2. */
@Timeout(30)
class CohortCommandTest {

    private final Cli cli = new Cli();

    @Test
    void versionOnTheCommandAndEverySubcommandSaysTheVersionJvmAndEngines() {
        for (String[] args : new String[][] {
            {"--version"},
            {"run", "--version"},
            {"bench", "--version"},
            {"bench", "collectives", "--version"},
            {"bench", "train", "--version"},
            {"data", "convert", "idx", "--version"},
            {"doctor", "--version"},
            {"flight", "--version"},
            {"trace", "--version"}
        }) {
            cli.out.getBuffer().setLength(0);
            assertThat(cli.run(args)).as(String.join(" ", args)).isZero();
            assertThat(cli.out.toString())
                    .startsWith("cohort ")
                    .contains("JVM: " + Runtime.version())
                    .contains("engines on the class path: ")
                    .contains("gloo");
        }
    }

    @Test
    void helpOnEverySubcommand() {
        for (String sub : new String[] {"run", "bench", "data", "doctor", "flight", "trace", "completion"}) {
            cli.out.getBuffer().setLength(0);
            assertThat(cli.run(sub, "--help")).isZero();
            assertThat(cli.out.toString()).contains("Usage: cohort " + sub);
        }
    }

    @Test
    void badInputIsOneLineAndExitTwo() {
        assertThat(cli.run("bench", "collectives", "--world", "x")).isEqualTo(2);
        assertThat(cli.err.toString())
                .isEqualTo("cohort bench collectives: Invalid value for option '--world': 'x' is not an int"
                        + System.lineSeparator() + "see cohort bench collectives --help" + System.lineSeparator());
        cli.err.getBuffer().setLength(0);
        assertThat(cli.run("nonsense")).isEqualTo(2);
        assertThat(cli.err.toString())
                .startsWith("cohort: Unmatched argument at index 0: 'nonsense'")
                .doesNotContain("\tat ");
        cli.err.getBuffer().setLength(0);
        assertThat(cli.run("run", "--nnodes", "two", "--", "sh")).isEqualTo(2);
        assertThat(cli.err.toString()).contains("--nnodes").doesNotContain("\tat ");
    }

    @Test
    void completionIsABashScriptForTheWholeTree() {
        assertThat(cli.run("completion")).isZero();
        assertThat(cli.out.toString()).contains("complete -F").contains("bench").contains("--nproc-per-node");
    }
}
