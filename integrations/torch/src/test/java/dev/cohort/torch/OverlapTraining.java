package dev.cohort.torch;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.DistributedBackend;
import dev.cohort.libtorch.LibTorch;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Scalar;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A training problem shaped to show overlap: backward first produces the gradient of a large
 * parameter that costs almost no compute ({@code wide}, 2 MiB: the first bucket), then spends
 * tens of milliseconds on a layer with few parameters and a large batch ({@code heavy}: the
 * last, small bucket). With overlap the first bucket's allreduce runs while {@code heavy}'s
 * backward computes; without, all of it waits for the step.
 *
 * <p>{@link #measure} trains two such models side by side, one distributed with overlap and one
 * without, alternating blocks of steps so both see the same machine. Overlap shows as first
 * buckets whose allreduce had finished before backward ended while the hooks that started them
 * held the training thread for almost nothing. (Whether that also shortens a step depends on a
 * free CPU for the communication: with as many busy ranks as CPUs, as on a 2-CPU test machine,
 * the communication's CPU work competes with backward's.)
 */
final class OverlapTraining {

    static final int WIDE = 512 * 1024;
    static final int BATCH = 8192;
    static final int IN = 512;
    static final int OUT = 256;

    static final class Net extends Module {
        final LinearImpl heavy = register_module("heavy", new LinearImpl(IN, OUT));
        final Tensor wide = register_parameter("wide", torch.zeros(WIDE));

        /** A loss whose backward reaches {@code wide} first (its nodes were made last), then {@code heavy}. */
        Tensor loss(Tensor x) {
            Tensor fit = heavy.forward(x).square().mean();
            return fit.add(wide.square().sum().mul(new Scalar(1e-6)));
        }
    }

    /**
     * What the overlapped run showed over {@code steps} timed steps: how many bucket allreduces
     * had finished before backward ended (the first bucket's can, the last one's rarely), how long its hooks held the training thread,
     * and, for scale, how long the run without overlap waited for the same communication.
     */
    record Overlap(long steps, long finishedDuringBackward, long hookWaitNanos, long plainWaitNanos, int buckets) {
        /** Bucket allreduces that ran entirely inside backward, per step. */
        double finishedShare() {
            return (double) finishedDuringBackward / steps;
        }

        /** The hooks' hold on the training thread, as a share of the communication wait without overlap. */
        double hookShare() {
            return (double) hookWaitNanos / Math.max(1, plainWaitNanos);
        }

        String line() {
            return "OVERLAP " + steps + " " + finishedDuringBackward + " " + hookWaitNanos + " " + plainWaitNanos + " "
                    + buckets;
        }

        static Overlap parse(String output) {
            java.util.regex.Matcher m = java.util.regex.Pattern.compile("OVERLAP (\\d+) (\\d+) (\\d+) (\\d+) (\\d+)")
                    .matcher(output);
            if (!m.find()) {
                throw new AssertionError("no OVERLAP line in:\n" + output);
            }
            return new Overlap(
                    Long.parseLong(m.group(1)),
                    Long.parseLong(m.group(2)),
                    Long.parseLong(m.group(3)),
                    Long.parseLong(m.group(4)),
                    Integer.parseInt(m.group(5)));
        }

        String describe() {
            return String.format(
                    "%d bucket allreduces finished inside backward in %d steps (%d buckets a step); the hooks "
                            + "held the training thread %.1f ms, against %.1f ms of waiting for communication without overlap",
                    finishedDuringBackward, steps, buckets, hookWaitNanos / 1e6, plainWaitNanos / 1e6);
        }
    }

    private OverlapTraining() {}

    static Overlap measure(DistributedBackend backend, int blocks, int steps) {
        LibTorch.load();
        torch.manual_seed(7);
        Tensor x = LibTorch.retain(torch.randn(BATCH, IN));
        Trained overlapped = distribute(backend, new Net(), true);
        Trained plain = distribute(backend, new Net(), false);
        train(overlapped, x, 2); // warm-up, and the buckets' one rebuild
        train(plain, x, 2);
        GradientBuckets o = overlapped.optimizer.buckets();
        long finished0 = o.finishedDuringBackward();
        long hooks0 = o.waitedInHooksNanos();
        long plainWait = 0;
        for (int block = 0; block < blocks; block++) {
            train(overlapped, x, steps);
            long before = plain.optimizer.communicationWaitNanos();
            train(plain, x, steps);
            plainWait += plain.optimizer.communicationWaitNanos() - before;
        }
        return new Overlap(
                (long) blocks * steps,
                o.finishedDuringBackward() - finished0,
                o.waitedInHooksNanos() - hooks0,
                plainWait,
                overlapped.optimizer.bucketCount());
    }

    /** A model and its distributed optimizer. */
    private record Trained(Net model, DistributedOptimizer optimizer) {}

    private static Trained distribute(DistributedBackend backend, Net model, boolean overlap) {
        Optimizer sgd = new SGD(model.parameters(), new SGDOptions(1e-3));
        Optimizer o = backend.distribute(DistributeRequest.of((Module) model, sgd, null, null)
                        .withOption(TorchDistributor.OVERLAP, overlap))
                .optimizer();
        return new Trained(model, (DistributedOptimizer) o);
    }

    private static void train(Trained run, Tensor x, int steps) {
        Net model = run.model;
        DistributedOptimizer optimizer = run.optimizer;
        for (int s = 0; s < steps; s++) {
            try (PointerScope scope = new PointerScope()) {
                optimizer.zero_grad();
                model.loss(x).backward();
                optimizer.step();
            }
        }
    }
}
