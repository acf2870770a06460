package dev.cohort.spark;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.examples.FashionMnistTrainer;
import dev.cohort.testkit.FashionMnistFiles;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;

/** SparkMain, the spark-submit entry: arguments, and a real run on a local master. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class SparkMainTest {

    @Test
    void badArgumentsSayWhatIsWrong() {
        StringWriter err = new StringWriter();
        CommandLine cli = new CommandLine(new SparkMain()).setErr(new PrintWriter(err));
        assertThat(cli.execute("com.example.Train")).isEqualTo(2);
        assertThat(err.toString()).contains("Missing required option: '--workers=N'");
        err.getBuffer().setLength(0);
        assertThat(cli.execute("--workers", "0", "com.example.Train")).isEqualTo(2);
        assertThat(err.toString()).contains("--workers and --timeout-minutes must be >= 1");
        err.getBuffer().setLength(0);
        assertThat(cli.execute("--workers", "2", "--env", "NOVALUE", "com.example.Train"))
                .isEqualTo(2);
        assertThat(err.toString()).contains("--env wants NAME=VALUE, got 'NOVALUE'");
    }

    @Test
    void runsTheTrainerOnALocalMaster() {
        FashionMnistFiles.installed();
        int code = new CommandLine(new SparkMain())
                .execute(
                        "--master",
                        "local[2]",
                        "--workers",
                        "2",
                        "--env",
                        "COHORT_BACKEND=gloo",
                        "--",
                        FashionMnistTrainer.class.getName(),
                        "--epochs",
                        "1",
                        "--max-steps",
                        "30",
                        "--threads",
                        "1");
        assertThat(code).isZero();
    }
}
