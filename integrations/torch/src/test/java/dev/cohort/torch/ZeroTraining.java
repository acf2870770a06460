package dev.cohort.torch;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.libtorch.LibTorch;
import java.nio.file.Path;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Adam;
import org.bytedeco.pytorch.AdamOptions;
import org.bytedeco.pytorch.AdamW;
import org.bytedeco.pytorch.AdamWOptions;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * The tiny training problem ({@link TinyTraining}) with a choice of optimizer, an optional clip of
 * the gradient norm, and under ZeRO with sharded checkpoints: for the ZeRO tests, in threads and
 * in processes.
 */
final class ZeroTraining {

    /** A bound the tiny problem's gradient norm exceeds in its first steps, so that clipping matters. */
    static final double CLIP = 0.3;

    private ZeroTraining() {}

    /** {@code sgd} (momentum 0.9, weight decay 1e-3), {@code adam} or {@code adamw} (weight decay 0.05). */
    static Optimizer optimizer(String kind, TensorVector params) {
        return switch (kind) {
            case "sgd" -> {
                SGDOptions options = new SGDOptions(0.1);
                options.momentum().put(0.9);
                options.weight_decay().put(1e-3);
                yield new SGD(params, options);
            }
            case "adam" -> new Adam(params, new AdamOptions(0.01));
            case "adamw" -> {
                AdamWOptions options = new AdamWOptions(0.01);
                options.weight_decay().put(0.05);
                yield new AdamW(params, options);
            }
            default -> throw new IllegalArgumentException("unknown optimizer " + kind);
        };
    }

    /** Steps {@code [0, steps)} on one process with the whole batch; returns the weights. */
    static float[] single(String kind, boolean clip, int steps) {
        LibTorch.load();
        TinyTraining.Net model = new TinyTraining.Net(0);
        Optimizer optimizer = optimizer(kind, model.parameters());
        for (int s = 0; s < steps; s++) {
            try (PointerScope scope = new PointerScope()) {
                optimizer.zero_grad();
                loss(model, TinyTraining.batch(s, 0, TinyTraining.GLOBAL_BATCH)).backward();
                if (clip) {
                    torch.clip_grad_norm_(model.parameters(), CLIP, 2.0, false);
                }
                optimizer.step();
            }
        }
        return TinyTraining.weights(model);
    }

    /** What a distributed run does beyond training. */
    record Run(
            String kind,
            int stage,
            String compression,
            boolean clip,
            Path checkpoint,
            int resumeFrom,
            int saveAt,
            int steps) {

        /** Trains {@code [0, steps)} without checkpoints. */
        static Run of(String kind, int stage, String compression, boolean clip, int steps) {
            return new Run(kind, stage, compression, clip, null, -1, -1, steps);
        }
    }

    /** After {@link #distributed} on this thread: this rank's optimizer state bytes at the end. */
    static final ThreadLocal<Long> lastStateBytes = ThreadLocal.withInitial(() -> -1L);

    /**
     * This rank's run: from the root's weights (or the checkpoint, when {@code resumeFrom >= 0}),
     * steps up to {@code steps} on this rank's shard of each global batch, saving a sharded
     * checkpoint after {@code saveAt} steps when asked (stage 0: the root saves unsharded).
     */
    static float[] distributed(DistributedBackend backend, Run run) {
        LibTorch.load();
        int shard = TinyTraining.GLOBAL_BATCH / backend.worldSize();
        TinyTraining.Net model = new TinyTraining.Net(backend.rank());
        DistributedOptimizer optimizer;
        try (PointerScope scope = new PointerScope()) {
            optimizer = (DistributedOptimizer) backend.distribute(
                            DistributeRequest.of((Module) model, optimizer(run.kind(), model.parameters()), null, null)
                                    .withOption(TorchDistributor.ZERO_STAGE, run.stage())
                                    .withOption(TorchDistributor.GRAD_COMPRESSION, run.compression()))
                    .optimizer();
        }
        int from = 0;
        if (run.resumeFrom() >= 0) {
            from = (int) Checkpoints.load(run.checkpoint(), model, optimizer).step();
        }
        for (int s = from; s < run.steps(); s++) {
            System.gc(); // native objects Cohort keeps must survive collection
            try (PointerScope scope = new PointerScope()) {
                optimizer.zero_grad();
                loss(model, TinyTraining.batch(s, backend.rank() * shard, shard))
                        .backward();
                if (run.clip()) {
                    optimizer.clipGradNorm(CLIP);
                }
                optimizer.step();
            }
            if (s + 1 == run.saveAt()) {
                TrainingPosition position = new TrainingPosition(0, s + 1, s + 1);
                if (run.stage() > 0) {
                    Checkpoints.saveSharded(run.checkpoint(), model, optimizer, position);
                } else if (backend.isRootWorker()) {
                    Checkpoints.save(run.checkpoint(), model, optimizer, position);
                }
                backend.barrier();
            }
        }
        lastStateBytes.set(optimizer.optimizerStateBytes());
        return TinyTraining.weights(model);
    }

    static Tensor loss(TinyTraining.Net model, MiniBatch b) {
        return torch.cross_entropy(model.forward(b.inputs()), b.targets());
    }
}
