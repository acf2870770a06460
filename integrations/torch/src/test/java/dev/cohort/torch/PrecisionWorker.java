package dev.cohort.torch;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.libtorch.LibTorch;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * The tiny training problem ({@link TinyTraining}) in a chosen precision, for the mixed-precision
 * tests in threads and in processes. As a process: {@code OUT ENGINE PRECISION ZERO_STAGE}; rank r
 * writes its weights to {@code OUT/<precision>-rank-r.txt}, then its loss scale and skipped steps
 * to {@code OUT/<precision>-rank-r.scale}.
 */
public final class PrecisionWorker {

    /**
     * What a run does beyond training: the precision, the ZeRO stage, fp16's loss scaling, an
     * infinity put into one gradient, and a checkpoint the root saves after {@code saveAt} steps
     * or every rank resumes from (when {@code resume}).
     */
    record Run(
            Precision precision,
            int zeroStage,
            double initialScale,
            int window,
            int overflowAt,
            int overflowRank,
            Path checkpoint,
            int saveAt,
            boolean resume) {
        static Run of(Precision precision, int zeroStage) {
            return new Run(precision, zeroStage, 1024, 2000, -1, -1, null, -1, false);
        }
    }

    /** After {@link #train} on this thread: the optimizer, to read its loss scale and skipped steps. */
    static final ThreadLocal<DistributedOptimizer> lastOptimizer = new ThreadLocal<>();

    public static void main(String[] args) {
        ProcessRanks.asRank(args[1], backend -> {
            Precision precision = Precision.of(args[2]);
            float[] w = train(backend, Run.of(precision, Integer.parseInt(args[3])));
            String name = precision + "-rank-" + backend.rank();
            Files.writeString(Path.of(args[0], name + ".txt"), Arrays.toString(w));
            DistributedOptimizer o = lastOptimizer.get();
            Files.writeString(Path.of(args[0], name + ".scale"), o.lossScale() + " " + o.skippedSteps());
        });
    }

    /**
     * This rank's run: from the root's weights, {@link TinyTraining#STEPS} steps of SGD on its
     * shard of each global batch, forward inside the optimizer's autocast; at step {@code
     * overflowAt} rank {@code overflowRank} puts an infinity into fc2's bias gradient (under ZeRO
     * stage 2 at world 2, the slice rank 1 owns).
     */
    static float[] train(DistributedBackend backend, Run run) {
        LibTorch.load();
        int shard = TinyTraining.GLOBAL_BATCH / backend.worldSize();
        TinyTraining.Net model = new TinyTraining.Net(backend.rank());
        DistributeRequest<Module, ?, Object, Object> request = DistributeRequest.of(
                        (Module) model, TinyTraining.sgd(model), null, null)
                .withOption(TorchDistributor.PRECISION, run.precision().toString())
                .withOption(TorchDistributor.ZERO_STAGE, run.zeroStage());
        if (run.precision() == Precision.FP16) {
            request = request.withOption(TorchDistributor.INITIAL_LOSS_SCALE, run.initialScale())
                    .withOption(TorchDistributor.LOSS_SCALE_WINDOW, run.window());
        }
        DistributedOptimizer optimizer;
        try (PointerScope scope = new PointerScope()) {
            optimizer = (DistributedOptimizer) backend.distribute(request).optimizer();
        }
        int from = run.resume()
                ? (int) Checkpoints.load(run.checkpoint(), model, optimizer).step()
                : 0;
        for (int s = from; s < TinyTraining.STEPS; s++) {
            try (PointerScope scope = new PointerScope()) {
                optimizer.zero_grad();
                MiniBatch b = TinyTraining.batch(s, backend.rank() * shard, shard);
                Tensor loss;
                try (Autocast autocast = optimizer.autocast()) {
                    loss = torch.cross_entropy(model.forward(b.inputs()), b.targets());
                }
                optimizer.scaleLoss(loss).backward();
                if (s == run.overflowAt() && backend.rank() == run.overflowRank()) {
                    model.fc2.bias().grad().fill_(new org.bytedeco.pytorch.Scalar(Double.POSITIVE_INFINITY));
                }
                optimizer.step();
            }
            if (s + 1 == run.saveAt() && backend.isRootWorker()) {
                Checkpoints.save(run.checkpoint(), model, optimizer, new TrainingPosition(0, s + 1, s + 1));
            }
        }
        lastOptimizer.set(optimizer);
        return TinyTraining.weights(model);
    }
}
