package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.libtorch.LibTorch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import org.bytedeco.pytorch.Optimizer;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class CheckpointResumeTest {

    @TempDir
    Path tmp;

    /** A fresh model and its optimizer, for the tests of saving and loading alone. */
    private final TinyTraining.Net model = new TinyTraining.Net(0);

    private final Optimizer optimizer = TinyTraining.sgd(model);

    @BeforeAll
    static void load() {
        LibTorch.load();
    }

    @Test
    void aResumedRunContinuesExactlyAsTheUninterruptedRun() {
        TinyTraining.Net straight = new TinyTraining.Net(0);
        TinyTraining.trainSingle(straight, TinyTraining.sgd(straight), 0, 6);

        TinyTraining.Net first = new TinyTraining.Net(0);
        Optimizer firstOptimizer = TinyTraining.sgd(first);
        TinyTraining.trainSingle(first, firstOptimizer, 0, 3);
        Path file = tmp.resolve("checkpoint.pt");
        Checkpoints.save(file, first, firstOptimizer, new TrainingPosition(1, 0, 3));
        float nextRandom = org.bytedeco.pytorch.global.torch.rand(1).item_float();

        TinyTraining.Net resumed = new TinyTraining.Net(42); // different weights, fresh momentum
        Optimizer resumedOptimizer = TinyTraining.sgd(resumed);
        TrainingPosition position = Checkpoints.load(file, resumed, resumedOptimizer);
        assertThat(position).isEqualTo(new TrainingPosition(1, 0, 3));
        assertThat(org.bytedeco.pytorch.global.torch.rand(1).item_float())
                .as("random state restored")
                .isEqualTo(nextRandom);
        TinyTraining.trainSingle(resumed, resumedOptimizer, (int) position.step(), 6);

        assertThat(TinyTraining.weights(resumed)).containsExactly(TinyTraining.weights(straight));
    }

    /** saveAsync: the file holds the state when the call returned, though training went on before it was durable. */
    @Test
    void aCheckpointSavedInTheBackgroundHoldsTheStateOfItsCall() throws Exception {
        TinyTraining.Net net = new TinyTraining.Net(0);
        Optimizer sgd = TinyTraining.sgd(net);
        TinyTraining.trainSingle(net, sgd, 0, 3);
        float[] atSave = TinyTraining.weights(net);
        Path file = tmp.resolve("async.pt");
        Checkpoints.saveAsync(file, net, sgd, new TrainingPosition(0, 3, 3), null);
        TinyTraining.trainSingle(net, sgd, 3, 6); // goes on while the file is made durable
        dev.cohort.api.checkpoint.CheckpointFile.awaitWrites();

        TinyTraining.Net loaded = new TinyTraining.Net(42);
        assertThat(Checkpoints.load(file, loaded, TinyTraining.sgd(loaded))).isEqualTo(new TrainingPosition(0, 3, 3));
        assertThat(TinyTraining.weights(loaded)).containsExactly(atSave);
    }

    @Test
    void savingReplacesTheCheckpointAtomicallyAndLeavesNoTemporaryFile() throws Exception {
        Path file = tmp.resolve("checkpoint.pt");
        Checkpoints.save(file, model, optimizer, new TrainingPosition(0, 1, 1));
        Checkpoints.save(file, model, optimizer, new TrainingPosition(0, 2, 2));
        try (var files = Files.list(tmp)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("checkpoint.pt");
        }
        assertThat(Checkpoints.load(file, model, optimizer)).isEqualTo(new TrainingPosition(0, 2, 2));
    }

    @Test
    void aFailedSaveLeavesThePreviousCheckpointIntact() throws Exception {
        Path file = tmp.resolve("checkpoint.pt");
        Checkpoints.save(file, model, optimizer, new TrainingPosition(0, 1, 1));
        byte[] before = Files.readAllBytes(file);
        // A directory where the temporary file must go makes the write fail midway.
        Files.createDirectory(
                tmp.resolve("checkpoint.pt.tmp-" + ProcessHandle.current().pid()));
        assertThatThrownBy(() -> Checkpoints.save(file, model, optimizer, new TrainingPosition(0, 2, 2)))
                .hasMessageContaining("saving checkpoint");
        assertThat(Files.readAllBytes(file)).isEqualTo(before);
    }

    @Test
    void corruptOrMissingCheckpointsAreNamed() throws Exception {
        assertThatThrownBy(() -> Checkpoints.load(tmp.resolve("nope.pt"), model, optimizer))
                .hasMessageContaining("nope.pt does not exist");
        Path bad = Files.writeString(tmp.resolve("bad.pt"), "not a checkpoint");
        assertThatThrownBy(() -> Checkpoints.load(bad, model, optimizer)).hasMessageContaining("bad.pt is unreadable");
    }
}
