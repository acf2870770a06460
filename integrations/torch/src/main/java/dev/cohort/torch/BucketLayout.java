package dev.cohort.torch;

import dev.cohort.api.collective.BufferAllocator;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.Tensor;

/** How {@link GradientBuckets} cuts parameters into buckets, and where the buckets' memory comes from. */
final class BucketLayout {

    private static final System.Logger LOG = System.getLogger(GradientBuckets.class.getName());

    private BucketLayout() {}

    /**
     * Buckets for {@code params} in {@code order} (ids): a parameter joins the open bucket while it
     * is of the same type and holds less than {@code bucketBytes} ({@code firstBucketBytes} for the
     * first), else opens a new one. The buckets have no storage yet.
     */
    static List<GradientBucket> cut(List<Tensor> params, int[] order, long firstBucketBytes, long bucketBytes) {
        List<GradientBucket> buckets = new ArrayList<>();
        GradientBucket open = null;
        for (int id : order) {
            Tensor p = params.get(id);
            long limit = buckets.size() == 1 ? firstBucketBytes : bucketBytes;
            if (open != null && open.holdsTypeOf(p) && open.bytes < limit) {
                open.add(id, p);
            } else {
                open = new GradientBucket(id, p);
                buckets.add(open);
            }
        }
        return buckets;
    }

    /**
     * Gives each bucket its storage: from the group's {@link BufferAllocator} where every rank has
     * room for it (the ranks agree with one small allreduce, as an engine refuses a collective whose
     * buffer is shared on some ranks only), else ordinary direct memory; plus a 16-bit wire copy for
     * each float32 bucket when {@code compression} is set. Returns how many buckets live in the
     * group's memory.
     */
    static int allocate(ProcessGroup group, List<GradientBucket> buckets, DataType compression) {
        DenseBuffer[] lent = new DenseBuffer[buckets.size()];
        BufferAllocator lender = group.allocator().orElse(null);
        int shared = 0;
        if (lender != null) {
            int[] everywhere = new int[buckets.size()];
            for (int i = 0; i < buckets.size(); i++) {
                GradientBucket b = buckets.get(i);
                lent[i] = lender.allocate(b.type, b.count()).orElse(null);
                everywhere[i] = lent[i] == null ? 0 : 1;
            }
            group.allreduce(DenseBuffer.of(everywhere), ReduceOp.MIN).await();
            long missedBytes = 0;
            for (int i = 0; i < buckets.size(); i++) {
                if (everywhere[i] == 1) {
                    shared++;
                    continue;
                }
                if (lent[i] != null) {
                    lender.release(lent[i]);
                    lent[i] = null;
                }
                missedBytes += buckets.get(i).bytes;
            }
            int missed = buckets.size() - shared;
            if (missed > 0 && group.rank() == 0) {
                LOG.log(
                        System.Logger.Level.WARNING,
                        String.format(
                                "%d of %d gradient buckets (%.1f MiB) do not fit on "
                                        + "every rank in %s; their allreduces copy in and out",
                                missed, buckets.size(), missedBytes / 1048576.0, lender.describe()));
            }
        }
        for (int i = 0; i < buckets.size(); i++) {
            GradientBucket b = buckets.get(i);
            FlatBuffer storage = lent[i] != null
                    ? FlatBuffer.over(lent[i], lender, b.params)
                    : FlatBuffer.allocate(b.type, b.count(), b.params);
            FlatBuffer wire = compression != null && b.type == DataType.FLOAT32
                    ? FlatBuffer.allocate(compression, b.count(), List.of())
                    : null;
            b.allocate(storage, wire);
        }
        return shared;
    }
}
