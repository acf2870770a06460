package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.DivergenceCheck;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@link DistributedTrainer#step()} compares the ranks' parameters at the steps {@link
 * DivergenceCheck} says are due (here every step: {@value DivergenceCheck#ENV_EVERY}=1), on two
 * processes over the tcp engine.
 */
class DivergenceCheckTest {

    private static final Map<String, String> EVERY_STEP = Map.of(DivergenceCheck.ENV_EVERY, "1");

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void aRankThatChangesItsParametersMakesEveryRankNameTheParameterAndTheStep() {
        DjlRuns.Run run = DjlRuns.start(tmp, EVERY_STEP, 2, "loop", 4, 6, 1, "diverge=2");
        Result changer = run.results().get(1);
        Matcher changed = Pattern.compile("CHANGED (\\S+) after step 2").matcher(changer.output());
        assertThat(changed.find())
                .as("rank 1 changed a parameter; its output:\n%s", changer.output())
                .isTrue();
        assertThat(changed.group(1))
                .as("the name of parameter 1: its path in the block")
                .isEqualTo("01Linear_bias");
        for (Result rank : run.results()) {
            assertThat(rank.exitCode())
                    .as("rank %d's exit code; its output:\n%s", rank.rank(), rank.output())
                    .isNotZero();
            assertThat(rank.output())
                    .as("rank %d", rank.rank())
                    .contains(
                            "ModelsDivergedException",
                            "the ranks' models differ at step 3 (they were the same at step 2): parameter 1 ("
                                    + changed.group(1) + ") is not the same on every rank");
        }
    }

    @Test
    @Timeout(value = 150, unit = TimeUnit.SECONDS)
    void trainingThatKeepsTheRanksAlikePassesACheckAtEveryStep() {
        DjlRuns.Run run =
                DjlRuns.start(tmp, EVERY_STEP, 2, "loop", 4, 4, 1, "optimizer=momentum", "shuffle=true", "epochs=2");
        JvmWorkers.assertAllOk(run.results());
    }
}
