package dev.cohort.torch;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.libtorch.LibTorch;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * One direct buffer that a collective moves, the 1-d tensor over its memory, and a view per packed
 * tensor, laid end to end from element 0 in the tensors' shapes: how gradient buckets, ZeRO's
 * gradients and module buffers travel flat. The native handles are retained (see {@code
 * LibTorch.retain}) until {@link #release()}; the tensors do not keep the memory alive, this object
 * does.
 */
final class FlatBuffer {

    final DenseBuffer buffer;
    /** A 1-d tensor over all of {@link #buffer}. */
    final Tensor flat;

    private final List<Tensor> views;
    /** Where {@link #buffer} came from, when it is not ordinary direct memory; null otherwise. */
    private final BufferAllocator lender;

    private FlatBuffer(DenseBuffer buffer, BufferAllocator lender, List<Tensor> like) {
        this.buffer = buffer;
        this.lender = lender;
        this.flat = LibTorch.retain(TensorBuffers.tensor(buffer));
        this.views = new ArrayList<>(like.size());
        long at = 0;
        for (Tensor t : like) {
            views.add(LibTorch.retain(
                    flat.narrow(0, at, t.numel()).view(t.sizes().vec().get())));
            at += t.numel();
        }
    }

    /** Direct memory for {@code count} elements of {@code type}, with views shaped like {@code like}. */
    static FlatBuffer allocate(DataType type, long count, List<Tensor> like) {
        return new FlatBuffer(DenseBuffer.allocateDirect(type, Math.toIntExact(count)), null, like);
    }

    /** Direct memory just large enough to pack {@code like} (all of {@code type}). */
    static FlatBuffer packing(DataType type, List<Tensor> like) {
        return allocate(type, like.stream().mapToLong(Tensor::numel).sum(), like);
    }

    /**
     * Over {@code buffer}, which {@code lender} lent (given back by {@link #release()}); {@code
     * lender} is null for ordinary direct memory.
     */
    static FlatBuffer over(DenseBuffer buffer, BufferAllocator lender, List<Tensor> like) {
        return new FlatBuffer(buffer, lender, like);
    }

    /** The view of the {@code i}-th packed tensor. */
    Tensor view(int i) {
        return views.get(i);
    }

    /** Copies {@code source} into the {@code i}-th view; zeros where it is undefined, nothing where it is that view. */
    void pack(int i, Tensor source) {
        Tensor view = views.get(i);
        if (!source.defined()) {
            view.zero_();
        } else if (!sameMemory(source, view)) {
            view.copy_(source);
        }
    }

    /** {@link #pack(int, Tensor)} for each tensor of {@code sources}, in order. */
    void packAll(List<Tensor> sources) {
        for (int i = 0; i < sources.size(); i++) {
            pack(i, sources.get(i));
        }
    }

    /** Copies each view back into the tensor of {@code targets} at its index. */
    void unpackAll(List<Tensor> targets) {
        for (int i = 0; i < targets.size(); i++) {
            targets.get(i).copy_(views.get(i));
        }
    }

    /**
     * This buffer (a 16-bit one) takes {@code source}'s share of an average over {@code ranks}:
     * {@code source} divided by {@code ranks} in its own type, so that 16-bit sums cannot overflow,
     * then rounded into this buffer once.
     */
    void takeShare(Tensor source, int ranks) {
        source.div_(new org.bytedeco.pytorch.Scalar((double) ranks));
        flat.copy_(source);
    }

    /** Frees the native handles and gives lent memory back; no tensor may point into it any more. */
    void release() {
        views.forEach(LibTorch::release);
        LibTorch.release(flat);
        if (lender != null) {
            lender.release(buffer);
        }
    }

    /**
     * Whether {@code t} is (a detached alias of) {@code view}: the same memory, where autograd would
     * accumulate in place. ({@code is_same} misses the aliases {@code detach()} makes, as {@code
     * Module.zero_grad(false)} does.)
     */
    static boolean sameMemory(Tensor t, Tensor view) {
        return t.defined() && t.data_ptr().address() == view.data_ptr().address() && t.numel() == view.numel();
    }
}
