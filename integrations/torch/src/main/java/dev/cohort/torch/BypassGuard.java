package dev.cohort.torch;

import dev.cohort.api.DivergenceCheck;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.libtorch.LibTorch;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorBase;
import org.bytedeco.pytorch.VoidTensorHook;

/**
 * Stops training that bypasses the {@link DistributedOptimizer}: a program that keeps stepping
 * the optimizer it passed to {@code distribute()} updates each rank's model with its own gradients
 * and averages nothing, without an error. The guard watches one small parameter: when a backward
 * pass reaches it and its values changed since the previous backward pass, whose gradients were
 * never averaged, the new backward pass fails with a message saying which optimizer to step.
 * (libtorch's optimizers update {@code p.data()}, which leaves the version counter as it was, so
 * the guard compares a fingerprint of the values: of at most {@value #WATCHED_ELEMENTS} elements.)
 *
 * <p>Gradient accumulation (backward passes without a step between them) changes no parameter and
 * passes; passes inside {@link DistributedOptimizer#noSync()} are not watched.
 */
final class BypassGuard {

    static final int WATCHED_ELEMENTS = 4096;

    private final Tensor watched;
    private final VoidTensorHook hook;
    /** Whether a backward pass ran whose gradients were not averaged since. */
    private boolean unaveraged;
    /** The watched values' fingerprint at that backward pass. */
    private long fingerprintAtBackward;

    private int paused;
    private boolean retired;

    /** A guard on {@code parameter}, which should get a gradient in every backward pass (e.g. a bias of the model's). */
    BypassGuard(Tensor parameter) {
        this.watched = LibTorch.retain(new Tensor(parameter));
        this.hook = LiveHooks.keep(new VoidTensorHook() {
            @Override
            public void call(TensorBase grad) {
                onBackward();
            }
        });
        watched.register_hook(hook);
    }

    private synchronized void onBackward() {
        if (paused > 0 || retired) {
            return;
        }
        long fingerprint = fingerprint();
        if (unaveraged && fingerprint != fingerprintAtBackward) {
            unaveraged = false;
            throw new IllegalStateException("the model's parameters changed after a backward pass whose gradients were "
                    + "never averaged: the program stepped the optimizer it passed to distribute(), which trains each rank "
                    + "alone. Step the optimizer distribute() returned (Distributed.optimizer(), a DistributedOptimizer) "
                    + "instead. (Backward passes that deliberately change parameters before the next one belong inside "
                    + "optimizer.noSync().)");
        }
        unaveraged = true;
        fingerprintAtBackward = fingerprint;
    }

    private long fingerprint() {
        DenseBuffer values = TensorBuffers.view(watched);
        return DivergenceCheck.fingerprint(values.slice(0, Math.min(values.count(), WATCHED_ELEMENTS)));
    }

    /** The gradients of the backward passes so far were averaged (a step or synchronize()). */
    synchronized void averaged() {
        unaveraged = false;
    }

    synchronized void pause() {
        paused++;
    }

    synchronized void resume() {
        paused--;
    }

    /** Watches no more (the optimizer let go of its group). */
    synchronized void retire() {
        retired = true;
    }
}
