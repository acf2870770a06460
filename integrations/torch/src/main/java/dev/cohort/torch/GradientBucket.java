package dev.cohort.torch;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.Work;
import dev.cohort.libtorch.ScalarTypes;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/**
 * One bucket of {@link GradientBuckets}: parameters of one type laid out in one flat buffer, and
 * what this iteration has done with it (which gradients arrived, the allreduce under way).
 */
final class GradientBucket {
    final DataType type;
    final List<Tensor> params = new ArrayList<>();
    /** Each parameter's id (its index in the buckets' parameter list). */
    final List<Integer> ids = new ArrayList<>();

    long bytes;
    /** The gradients' storage; null until {@link #allocate}. */
    FlatBuffer storage;
    /** The 16-bit copy that travels instead of {@link #storage} when gradients are compressed, or null. */
    FlatBuffer wire;

    boolean[] ready;
    int readyCount;
    /** Backward touched the bucket again after its allreduce started (accumulation): the step redoes it. */
    boolean stale;

    Work work;
    /** The JFR event of the average under way ({@link BucketEvent}). */
    BucketEvent event;

    /** A bucket of {@code first}'s type, holding it (id {@code firstId}) to begin with. */
    GradientBucket(int firstId, Tensor first) {
        this.type = ScalarTypes.dataType(first.scalar_type());
        add(firstId, first);
    }

    /** Whether a parameter of {@code t}'s type belongs in a bucket of this one's. */
    boolean holdsTypeOf(Tensor t) {
        return ScalarTypes.dataType(t.scalar_type()) == type;
    }

    void add(int id, Tensor p) {
        ids.add(id);
        params.add(p);
        bytes += p.numel() * type.byteSize();
    }

    int count() {
        return Math.toIntExact(bytes / type.byteSize());
    }

    /** Takes {@code storage} (its views in parameter order) and, where given, the 16-bit {@code wire}. */
    void allocate(FlatBuffer storage, FlatBuffer wire) {
        this.storage = storage;
        this.wire = wire;
        ready = new boolean[params.size()];
    }

    Tensor view(int slot) {
        return storage.view(slot);
    }

    /** Gives the storage back (after a rebuild or at retirement; no parameter points into it any more). */
    void free() {
        storage.release();
        if (wire != null) {
            wire.release();
        }
    }

    /** The bytes one allreduce of this bucket carries. */
    long wireBytes() {
        return (wire != null ? wire : storage).buffer.byteSize();
    }

    boolean isFull() {
        return readyCount == params.size();
    }

    /** Records that slot {@code slot}'s gradient is in. */
    void markReady(int slot) {
        if (!ready[slot]) {
            ready[slot] = true;
            readyCount++;
        }
    }

    /** Fills the slots no hook filled this iteration from {@code .grad} (zeros when undefined). */
    void packMissing() {
        for (int i = 0; i < params.size(); i++) {
            if (!ready[i] || stale) {
                storage.pack(i, params.get(i).grad());
            }
        }
    }

    /**
     * Makes each parameter's {@code .grad} its view into the bucket (no copy); with
     * {@code usedAnywhere}, a parameter no rank had a gradient for keeps none.
     */
    void pointGradients(int[] usedAnywhere) {
        for (int i = 0; i < params.size(); i++) {
            Tensor p = params.get(i);
            Tensor view = view(i);
            if (usedAnywhere != null && usedAnywhere[ids.get(i)] == 0) {
                if (p.grad().defined()) {
                    p.mutable_grad().put(new Tensor());
                }
            } else if (!FlatBuffer.sameMemory(p.grad(), view)) {
                p.mutable_grad().put(view);
            }
        }
    }

    void reset() {
        Arrays.fill(ready, false);
        readyCount = 0;
        stale = false;
        work = null;
    }
}
