package dev.cohort.torch;

import dev.cohort.api.checkpoint.CheckpointFile;
import dev.cohort.api.checkpoint.TrainingPosition;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Training checkpoints: model parameters and buffers, optimizer state (momentum and the like),
 * the {@link TrainingPosition} and the state of libtorch's default CPU random generator (dropout,
 * random initialization; the root's state, restored on every rank), in one libtorch archive,
 * written atomically and durably ({@link CheckpointFile}).
 * Data order and any randomness are functions of (seed, epoch), so the position is all a resumed
 * run needs to continue exactly as the uninterrupted run would.
 */
public final class Checkpoints {

    private Checkpoints() {
    }

    /** Saves atomically and durably ({@link CheckpointFile}); call on the root worker only. */
    public static void save(Path file, Module model, Optimizer optimizer, TrainingPosition position) {
        CheckpointFile.write(file, tmp -> {
            try {
                OutputArchive archive = new OutputArchive();
                OutputArchive modelArchive = new OutputArchive();
                model.save(modelArchive);
                archive.write("model", modelArchive);
                OutputArchive optimizerArchive = new OutputArchive();
                optimizer.save(optimizerArchive);
                archive.write("optimizer", optimizerArchive);
                archive.write("position", torch.tensor(new long[] {position.epoch(), position.batchInEpoch(),
                        position.step()}));
                archive.write("rng", torch.getDefaultCPUGenerator().get_state());
                archive.save_to(tmp.toString());
            } catch (RuntimeException e) {
                throw new IllegalStateException("saving checkpoint " + file + " failed: " + e.getMessage(), e);
            }
        });
    }

    /** Loads into {@code model} and {@code optimizer} (on every rank) and returns where to continue. */
    public static TrainingPosition load(Path file, Module model, Optimizer optimizer) {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("checkpoint " + file + " does not exist");
        }
        try {
            InputArchive archive = new InputArchive();
            archive.load_from(file.toString());
            InputArchive modelArchive = new InputArchive();
            archive.read("model", modelArchive);
            model.load(modelArchive);
            InputArchive optimizerArchive = new InputArchive();
            archive.read("optimizer", optimizerArchive);
            optimizer.load(optimizerArchive);
            Tensor position = new Tensor();
            archive.read("position", position);
            Tensor rng = new Tensor();
            if (archive.try_read("rng", rng)) {
                torch.getDefaultCPUGenerator().set_state(rng);
            }
            return new TrainingPosition((int) position.get(0).item_long(), (int) position.get(1).item_long(),
                    position.get(2).item_long());
        } catch (RuntimeException e) {
            throw new IllegalStateException("checkpoint " + file + " is unreadable or does not match this model: "
                    + e.getMessage(), e);
        }
    }
}
