package dev.cohort.torch;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Distributed;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.libtorch.LibTorch;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * A small deterministic training problem for the equivalence tests: an MLP 8-16-3, cross-entropy,
 * SGD with momentum, a fixed global batch of 12 examples per step.
 */
final class TinyTraining {

    static final int GLOBAL_BATCH = 12;
    static final int STEPS = 6;
    /** After {@link #distributed} on this thread: "S OF N", S of the optimizer's N buckets in memory the engine moves in place. */
    static final ThreadLocal<String> lastBuckets = ThreadLocal.withInitial(() -> "");

    static final class Net extends Module {
        final LinearImpl fc1;
        final LinearImpl fc2;

        Net(long seed) {
            this(seed, false);
        }

        /**
         * {@code registeredBackwards}: fc2 is registered before fc1, so the first bucket layout
         * (reverse registration order) is the opposite of the order backward produces gradients.
         * The values are the same either way.
         */
        Net(long seed, boolean registeredBackwards) {
            if (registeredBackwards) {
                fc2 = register_module("fc2", new LinearImpl(16, 3));
                fc1 = register_module("fc1", new LinearImpl(8, 16));
            } else {
                fc1 = register_module("fc1", new LinearImpl(8, 16));
                fc2 = register_module("fc2", new LinearImpl(16, 3));
            }
            java.util.SplittableRandom random = new java.util.SplittableRandom(seed);
            for (Tensor p : inUseOrder()) {
                DenseBuffer b = TensorBuffers.view(p);
                for (int k = 0; k < b.count(); k++) {
                    b.setDouble(k, random.nextDouble(-0.5, 0.5));
                }
            }
        }

        /** fc1's weight and bias, then fc2's, whatever the registration order. */
        java.util.List<Tensor> inUseOrder() {
            return java.util.List.of(fc1.weight(), fc1.bias(), fc2.weight(), fc2.bias());
        }

        Tensor forward(Tensor x) {
            return fc2.forward(torch.relu(fc1.forward(x)));
        }
    }

    private TinyTraining() {}

    static Optimizer sgd(Module model) {
        SGDOptions options = new SGDOptions(0.1);
        options.momentum().put(0.9);
        return new SGD(model.parameters(), options);
    }

    /** Examples {@code [from, from + count)} of step {@code step}'s global batch. */
    static MiniBatch batch(int step, int from, int count) {
        float[] x = new float[count * 8];
        long[] y = new long[count];
        for (int i = 0; i < count; i++) {
            java.util.SplittableRandom r = new java.util.SplittableRandom(step * 1000L + from + i);
            for (int f = 0; f < 8; f++) {
                x[i * 8 + f] = (float) r.nextDouble(-1, 1);
            }
            y[i] = r.nextInt(3);
        }
        return new MiniBatch(torch.tensor(x).reshape(count, 8), torch.tensor(y));
    }

    static void step(Net model, Optimizer optimizer, MiniBatch batch) {
        optimizer.zero_grad();
        Tensor loss = torch.cross_entropy(model.forward(batch.inputs()), batch.targets());
        loss.backward();
        optimizer.step();
    }

    /** Steps {@code [fromStep, toStep)} on one process with the whole batch. */
    static void trainSingle(Net model, Optimizer optimizer, int fromStep, int toStep) {
        for (int s = fromStep; s < toStep; s++) {
            step(model, optimizer, batch(s, 0, GLOBAL_BATCH));
        }
    }

    /** The whole run on one process; returns the final weights. */
    static float[] single() {
        LibTorch.load();
        Net model = new Net(0);
        trainSingle(model, sgd(model), 0, STEPS);
        return weights(model);
    }

    /**
     * The run on this rank of {@code backend}: each rank starts from different weights (the root's
     * are broadcast) and trains on its contiguous shard of each global batch.
     */
    static float[] distributed(DistributedBackend backend) {
        return distributed(backend, 25L << 20, true, 1, false);
    }

    /**
     * As above with a bucket size, overlap on or off, and {@code microBatches} backward passes per
     * step (gradient accumulation; the loss of each is scaled by 1/microBatches), the early ones
     * inside {@code noSync()} when asked.
     */
    static float[] distributed(
            DistributedBackend backend, long bucketBytes, boolean overlap, int microBatches, boolean noSync) {
        return distributed(backend, bucketBytes, overlap, microBatches, noSync, Variant.PLAIN, "none");
    }

    /** How a run departs from the plain one, beyond buckets, overlap and accumulation. */
    enum Variant {
        PLAIN,
        /** Gradients zeroed in place through the module ({@code zero_grad(false)}), so {@code .grad} stays the bucket view. */
        ZEROED_IN_PLACE,
        /** fc2 registered before fc1: the buckets must be rebuilt in backward's order. */
        REGISTERED_BACKWARDS
    }

    /** The equivalence variants {@link #variant} runs; each must end where the plain run ends. */
    static final java.util.List<String> VARIANTS = java.util.List.of(
            "no overlap",
            "small buckets",
            "accumulation in noSync",
            "accumulation without noSync",
            "gradients zeroed in place",
            "parameters registered backwards");

    static java.util.List<String> variants() {
        return VARIANTS;
    }

    /** The run on this rank in variant {@code name} (one of {@link #VARIANTS}); returns the final weights. */
    static float[] variant(DistributedBackend backend, String name) {
        return switch (name) {
            case "no overlap" -> distributed(backend, 25L << 20, false, 1, false);
            case "small buckets" -> distributed(backend, 100, true, 1, false);
            case "accumulation in noSync" -> distributed(backend, 100, true, 2, true);
            case "accumulation without noSync" -> distributed(backend, 100, true, 2, false);
            case "gradients zeroed in place" ->
                distributed(backend, 100, true, 1, false, Variant.ZEROED_IN_PLACE, "none");
            case "parameters registered backwards" -> {
                float[] w = distributed(backend, 100, true, 1, false, Variant.REGISTERED_BACKWARDS, "none");
                // Reverse registration order put fc1 (ids 0, 1) first; backward made fc2's (2, 3) first.
                int[] firstTwo = java.util.Arrays.copyOf(lastOrder.get(), 2);
                java.util.Arrays.sort(firstTwo);
                if (!java.util.Arrays.equals(firstTwo, new int[] {2, 3})) {
                    throw new AssertionError("the buckets were not rebuilt in backward's order: "
                            + java.util.Arrays.toString(lastOrder.get()));
                }
                yield w;
            }
            default -> throw new IllegalArgumentException("unknown variant '" + name + "'; one of " + VARIANTS);
        };
    }

    /** After {@link #distributed} on this thread: the parameter order of the final bucket layout. */
    static final ThreadLocal<int[]> lastOrder = ThreadLocal.withInitial(() -> new int[0]);

    /**
     * As above, in {@code variant}, the gradients sent as {@code compression} ({@link
     * TorchDistributor#GRAD_COMPRESSION}).
     */
    static float[] distributed(
            DistributedBackend backend,
            long bucketBytes,
            boolean overlap,
            int microBatches,
            boolean noSync,
            Variant variant,
            String compression) {
        LibTorch.load();
        int n = backend.worldSize();
        int shard = GLOBAL_BATCH / n;
        int micro = shard / microBatches;
        Net local = new Net(backend.rank(), variant == Variant.REGISTERED_BACKWARDS);
        Distributed<Module, Optimizer, Object, Object> d;
        // distribute inside a PointerScope, as JavaCPP programs often run everything in one
        try (org.bytedeco.javacpp.PointerScope scope = new org.bytedeco.javacpp.PointerScope()) {
            d = backend.distribute(DistributeRequest.of((Module) local, sgd(local), null, null)
                    .withOption(TorchDistributor.BUCKET_BYTES, bucketBytes)
                    .withOption(TorchDistributor.OVERLAP, overlap)
                    .withOption(TorchDistributor.GRAD_COMPRESSION, compression));
        }
        DistributedOptimizer optimizer = (DistributedOptimizer) d.optimizer();
        for (int s = 0; s < STEPS; s++) {
            System.gc(); // native objects Cohort keeps must survive collection
            try (org.bytedeco.javacpp.PointerScope stepScope = new org.bytedeco.javacpp.PointerScope()) {
                if (variant == Variant.ZEROED_IN_PLACE) {
                    local.zero_grad(false);
                } else {
                    optimizer.zero_grad();
                }
                for (int m = 0; m < microBatches; m++) {
                    MiniBatch b = batch(s, backend.rank() * shard + m * micro, micro);
                    Tensor loss = torch.cross_entropy(local.forward(b.inputs()), b.targets())
                            .div(new org.bytedeco.pytorch.Scalar((double) microBatches));
                    if (noSync && m < microBatches - 1) {
                        try (DistributedOptimizer.NoSync scope = optimizer.noSync()) {
                            loss.backward();
                        }
                    } else {
                        loss.backward();
                    }
                }
                optimizer.step();
            }
        }
        // Zeroed in place, .grad stays the bucket view and autograd adds into it after the hook: those buckets start at
        // the step.
        if (overlap
                && !noSync
                && variant != Variant.ZEROED_IN_PLACE
                && optimizer.bucketsStartedDuringBackward() < (long) STEPS * optimizer.bucketCount()) {
            throw new AssertionError("only " + optimizer.bucketsStartedDuringBackward() + " of " + STEPS + " x "
                    + optimizer.bucketCount() + " buckets started during backward");
        }
        lastBuckets.set(optimizer.bucketsInSharedMemory() + " OF " + optimizer.bucketCount());
        lastOrder.set(optimizer.buckets().parameterOrder());
        return weights(local);
    }

    static float[] weights(Module model) {
        if (model instanceof Net net) {
            TensorVector inUse = new TensorVector();
            net.inUseOrder().forEach(inUse::push_back);
            return weights(inUse);
        }
        return weights(model.parameters());
    }

    static float[] weights(TensorVector params) {
        int total = 0;
        for (long i = 0; i < params.size(); i++) {
            total += (int) params.get(i).numel();
        }
        float[] all = new float[total];
        int at = 0;
        for (long i = 0; i < params.size(); i++) {
            DenseBuffer b = TensorBuffers.view(params.get(i));
            for (int k = 0; k < b.count(); k++) {
                all[at++] = (float) b.getDouble(k);
            }
        }
        return all;
    }

    /** The largest relative difference, with an absolute floor of 1e-7. */
    static double maxRelativeDifference(float[] a, float[] b) {
        if (a.length != b.length) {
            throw new AssertionError("different parameter counts: " + a.length + " vs " + b.length);
        }
        double worst = 0;
        for (int i = 0; i < a.length; i++) {
            double diff = Math.abs(a[i] - b[i]);
            double scale = Math.max(Math.max(Math.abs(a[i]), Math.abs(b[i])), 1e-2);
            worst = Math.max(worst, diff / scale);
        }
        return worst;
    }
}
