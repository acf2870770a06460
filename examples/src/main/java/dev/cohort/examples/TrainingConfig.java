package dev.cohort.examples;

import java.nio.file.Path;
import java.util.Objects;

/**
 * What {@link FashionMnistTraining} runs: the trainer's options, checked.
 *
 * @param model           which network
 * @param epochs          epochs to train (the run ends at the end of this epoch count)
 * @param batchSize       examples per step <em>per worker</em>; the global batch is this times the workers
 * @param lr              SGD learning rate
 * @param schedule        how the learning rate changes over the run
 * @param momentum        SGD momentum
 * @param seed            seeds the initial weights and the data order
 * @param threads         libtorch compute threads of this worker
 * @param maxSteps        stop after this many steps in all (0: no limit), for quick runs and tests
 * @param checkpointDir   where to save checkpoints, or {@code null} for none
 * @param checkpointEvery also save every this many steps (0: at the end of each epoch only)
 * @param resume          continue from the latest checkpoint in {@code checkpointDir} when there is one
 * @param gradCompression {@code none}, or {@code bf16}/{@code fp16}: gradients travel as 16-bit floats
 * @param zeroStage       0, or the ZeRO stage 1 or 2: the optimizer state (and at 2 the averaged gradients) sharded
 * @param precision       {@code fp32}, or {@code bf16}/{@code fp16}: forward and backward under autocast (torch)
 */
public record TrainingConfig(
        Classifier.Kind model,
        int epochs,
        int batchSize,
        double lr,
        Schedule schedule,
        double momentum,
        long seed,
        int threads,
        long maxSteps,
        Path checkpointDir,
        int checkpointEvery,
        boolean resume,
        String gradCompression,
        int zeroStage,
        String precision,
        ElasticBatch elasticBatch) {

    public TrainingConfig {
        Objects.requireNonNull(model, "model");
        Objects.requireNonNull(schedule, "schedule");
        Objects.requireNonNull(elasticBatch, "elasticBatch");
        require(epochs >= 1, "--epochs must be >= 1, got " + epochs);
        require(batchSize >= 1, "--batch-size must be >= 1, got " + batchSize);
        require(lr > 0 && Double.isFinite(lr), "--lr must be a positive number, got " + lr);
        require(momentum >= 0 && momentum < 1, "--momentum must be in [0, 1), got " + momentum);
        require(threads >= 1, "--threads must be >= 1, got " + threads);
        require(maxSteps >= 0, "--max-steps must be >= 0, got " + maxSteps);
        require(checkpointEvery >= 0, "--checkpoint-every must be >= 0, got " + checkpointEvery);
        require(!resume || checkpointDir != null, "--resume needs --checkpoint-dir");
        require(
                java.util.List.of("none", "bf16", "fp16").contains(gradCompression),
                "--grad-compression must be bf16, fp16 or none, got '" + gradCompression + "'");
        require(zeroStage >= 0 && zeroStage <= 2, "--zero must be 0, 1 or 2, got " + zeroStage);
        require(
                java.util.List.of("fp32", "bf16", "fp16").contains(precision),
                "--precision must be fp32, bf16 or fp16, got '" + precision + "'");
    }

    /** What an elastic run keeps when its group re-forms at another size. */
    public enum ElasticBatch {
        /** Each worker's batch, and the learning rate scales with the number of workers (the default). */
        PER_WORKER,
        /** The global batch: each worker's batch becomes the global batch over the new number of workers. */
        GLOBAL;

        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT).replace('_', '-');
        }
    }

    /** How the learning rate changes over the run. */
    public enum Schedule {
        /** {@code --lr} throughout. */
        CONSTANT,
        /** From {@code --lr} down to 0 at the last planned step, linearly. */
        LINEAR;

        public String label() {
            return name().toLowerCase(java.util.Locale.ROOT);
        }
    }

    /** The defaults of the command line for {@code model}: what reaches the targets (0.88 mlp, 0.90 cnn) with 2 workers. */
    public static TrainingConfig defaults(Classifier.Kind model) {
        return new TrainingConfig(
                model,
                4,
                64,
                defaultLr(model),
                Schedule.LINEAR,
                0.9,
                42,
                1,
                0,
                null,
                0,
                false,
                "none",
                0,
                "fp32",
                ElasticBatch.PER_WORKER);
    }

    /** The learning rate used when {@code --lr} is not given. */
    public static double defaultLr(Classifier.Kind model) {
        return switch (model) {
            case MLP -> 0.05;
            case CNN -> 0.05;
        };
    }

    public TrainingConfig withMaxSteps(long steps) {
        return copy(steps, checkpointDir, checkpointEvery, resume, zeroStage);
    }

    public TrainingConfig withCheckpoints(Path dir, int every, boolean resumeFromLatest) {
        return copy(maxSteps, dir, every, resumeFromLatest, zeroStage);
    }

    public TrainingConfig withZeroStage(int stage) {
        return copy(maxSteps, checkpointDir, checkpointEvery, resume, stage);
    }

    /** This configuration with the settings the {@code with} methods change replaced. */
    private TrainingConfig copy(long steps, Path dir, int every, boolean resumeFromLatest, int stage) {
        return new TrainingConfig(
                model,
                epochs,
                batchSize,
                lr,
                schedule,
                momentum,
                seed,
                threads,
                steps,
                dir,
                every,
                resumeFromLatest,
                gradCompression,
                stage,
                precision,
                elasticBatch);
    }

    private static void require(boolean ok, String message) {
        if (!ok) {
            throw new IllegalArgumentException(message);
        }
    }
}
