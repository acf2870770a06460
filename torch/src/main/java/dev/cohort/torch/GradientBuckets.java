package dev.cohort.torch;

import dev.cohort.core.collective.DataType;
import dev.cohort.core.collective.DenseBuffer;
import dev.cohort.core.collective.ProcessGroup;
import dev.cohort.core.collective.ReduceOp;
import dev.cohort.core.collective.Work;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

/**
 * Averages gradients across ranks, DDP style.
 *
 * <p>Words: a <em>bucket</em> is one direct buffer holding the flattened gradients of several
 * parameters of one type, at most {@code bucketBytes} long (a parameter larger than that gets a
 * bucket of its own). Parameters are assigned in reverse registration order, the order in which
 * backward usually produces their gradients, so every rank builds the same buckets and reduces them
 * in the same order. {@link #averageGradients()} packs every bucket (a parameter without a gradient
 * counts as zeros), starts its allreduce at once (so bucket k travels while bucket k+1 is packed),
 * then waits for each in order and unpacks the averages into the parameters' {@code .grad}.
 */
final class GradientBuckets {

    /** DDP's default bucket size. */
    static final long DEFAULT_BUCKET_BYTES = 25L * 1024 * 1024;

    private final ProcessGroup group;
    private final List<Bucket> buckets = new ArrayList<>();

    GradientBuckets(ProcessGroup group, TensorVector parameters, long bucketBytes) {
        if (bucketBytes < 1) {
            throw new IllegalArgumentException("bucket size must be >= 1 byte, got " + bucketBytes);
        }
        this.group = group;
        List<Tensor> params = new ArrayList<>();
        for (long i = parameters.size() - 1; i >= 0; i--) {
            Tensor p = parameters.get(i);
            if (p.requires_grad()) {
                params.add(p);
            }
        }
        Bucket open = null;
        for (Tensor p : params) {
            DataType type = TensorBuffers.dataType(p.scalar_type());
            long bytes = p.numel() * type.byteSize();
            if (open == null || open.type != type || (open.bytes > 0 && open.bytes + bytes > bucketBytes)) {
                open = new Bucket(type);
                buckets.add(open);
            }
            open.add(p, bytes);
        }
        buckets.forEach(Bucket::allocate);
    }

    int bucketCount() {
        return buckets.size();
    }

    void averageGradients() {
        List<Work> works = new ArrayList<>(buckets.size());
        for (Bucket b : buckets) {
            b.pack();
            works.add(group.allreduce(b.buffer, ReduceOp.AVG));
        }
        for (int i = 0; i < buckets.size(); i++) {
            works.get(i).await();
            buckets.get(i).unpack();
        }
    }

    /** One flat buffer and the parameters laid out in it. */
    private static final class Bucket {
        final DataType type;
        final List<Tensor> params = new ArrayList<>();
        final List<long[]> ranges = new ArrayList<>();   // {offset, count} in elements
        long bytes;
        DenseBuffer buffer;
        Tensor flat;
        final List<Tensor> views = new ArrayList<>();

        Bucket(DataType type) {
            this.type = type;
        }

        void add(Tensor p, long paramBytes) {
            ranges.add(new long[] {bytes / type.byteSize(), p.numel()});
            params.add(p);
            bytes += paramBytes;
        }

        void allocate() {
            buffer = DenseBuffer.allocateDirect(type, Math.toIntExact(bytes / type.byteSize()));
            flat = TensorBuffers.tensor(buffer);
            for (int i = 0; i < params.size(); i++) {
                long[] r = ranges.get(i);
                views.add(flat.narrow(0, r[0], r[1]).view(params.get(i).sizes().vec().get()));
            }
        }

        void pack() {
            for (int i = 0; i < params.size(); i++) {
                Tensor grad = params.get(i).grad();
                if (grad.defined()) {
                    views.get(i).copy_(grad);
                } else {
                    views.get(i).zero_();
                }
            }
        }

        void unpack() {
            for (int i = 0; i < params.size(); i++) {
                Tensor p = params.get(i);
                Tensor grad = p.grad();
                if (grad.defined()) {
                    grad.copy_(views.get(i));
                } else {
                    p.mutable_grad().put(views.get(i).clone());
                }
            }
        }
    }
}
