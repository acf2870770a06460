package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * 2 ranks on the tcp engine, 2 shuffled epochs of 6 steps: a run that the root checkpoints after
 * step 8 (epoch 2, batch 3), and a second job that loads that checkpoint on every rank and trains on
 * from there, end with bit-identical parameters: the optimizer's state (momentum, Adam's moments
 * and update counts) survives the new process's other parameter ids, and the sampler resumes
 * mid-epoch in the same order.
 */
class CheckpointsTest {

    private static final int BATCH = 4;
    private static final int STEPS = 6;

    @TempDir
    Path tmp;

    @ParameterizedTest(name = "{0}")
    @ValueSource(strings = {"momentum", "adam zero=1", "adam zero=2 async=true"})
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void aResumedJobEndsBitIdenticalToTheUninterruptedOne(String setup) {
        String optimizer = setup.split(" ")[0];
        // ZeRO: every rank sends the root its share. async: the root's file is made durable in the background.
        String zero = setup.contains("zero=") ? setup.split(" ")[1] : "zero=0";
        String async = setup.contains("async=true") ? "async=true" : "async=false";
        Path checkpoint = tmp.resolve("checkpoint-" + setup.replace(' ', '-').replace('=', '-') + ".djl");
        float[] straight = DjlRuns.train(
                tmp, 2, "loop", BATCH, STEPS, 1, twoEpochs(optimizer, zero, async, "save=8:" + checkpoint));
        assertThat(checkpoint).isRegularFile();
        assertThat(tmp).isDirectoryNotContaining(p -> p.getFileName().toString().contains(".tmp-"));
        DjlRuns.Run resumed =
                DjlRuns.run(tmp, 2, "loop", BATCH, STEPS, 1, twoEpochs(optimizer, zero, async, "resume=" + checkpoint));
        for (Result r : resumed.results()) {
            assertThat(r.output()).contains("RESUMED AT TrainingPosition[epoch=1, batchInEpoch=2, step=8]");
        }
        assertThat(DjlRuns.read(resumed.params())).containsExactly(straight);
        if (!zero.equals("zero=0")) {
            // Resumed sharded, each rank kept only its share of the state it loaded.
            assertThat(resumed.results().get(0).output()).contains("optimizer state for 1 of 4 parameters");
        }
    }

    /** The options of a two-epoch shuffled run with {@code optimizer} at ZeRO stage {@code zero}, then {@code saveOrResume}. */
    private static String[] twoEpochs(String optimizer, String zero, String async, String saveOrResume) {
        return new String[] {"optimizer=" + optimizer, zero, async, "epochs=2", "shuffle=true", saveOrResume};
    }

    @Test
    @Timeout(value = 300, unit = TimeUnit.SECONDS)
    void aCheckpointOfAnotherOptimizerIsRefusedNamingBoth() {
        Path checkpoint = tmp.resolve("momentum.djl");
        DjlRuns.train(tmp, 1, "loop", BATCH, 2, 1, "optimizer=momentum", "save=2:" + checkpoint);
        Result refused = DjlRuns.start(tmp, 1, "loop", BATCH, 2, 1, "optimizer=adam", "resume=" + checkpoint)
                .results()
                .get(0);
        assertThat(refused.exitCode()).isNotZero();
        assertThat(refused.output())
                .contains(
                        "checkpoint " + checkpoint + " holds the state of a "
                                + "ai.djl.training.optimizer.Sgd, this trainer's optimizer is a ai.djl.training.optimizer.Adam");
    }
}
