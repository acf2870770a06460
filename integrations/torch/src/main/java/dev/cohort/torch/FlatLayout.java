package dev.cohort.torch;

import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

/**
 * One optimizer parameter group's parameters that take gradients, laid end to end in a flat
 * space of {@link #total()} elements, in the group's order: the space ZeRO partitions, and in
 * which checkpoints move optimizer state between shardings.
 *
 * @param positions each parameter's position in its group (parameters that take no gradient are skipped)
 * @param offsets   each parameter's first element in the flat space
 * @param shapes    each parameter's shape
 */
record FlatLayout(int[] positions, long[] offsets, List<long[]> shapes, long total) {

    static FlatLayout of(TensorVector groupParameters) {
        List<Integer> positions = new ArrayList<>();
        List<Long> offsets = new ArrayList<>();
        List<long[]> shapes = new ArrayList<>();
        long at = 0;
        for (long j = 0; j < groupParameters.size(); j++) {
            Tensor p = groupParameters.get(j);
            if (!p.requires_grad()) {
                continue;
            }
            positions.add((int) j);
            offsets.add(at);
            shapes.add(p.sizes().vec().get());
            at += p.numel();
        }
        return new FlatLayout(
                positions.stream().mapToInt(Integer::intValue).toArray(),
                offsets.stream().mapToLong(Long::longValue).toArray(),
                shapes,
                at);
    }

    int size() {
        return positions.length;
    }

    long count(int i) {
        long n = 1;
        for (long d : shapes.get(i)) {
            n *= d;
        }
        return n;
    }

    /** Elements per rank when {@code ranks} share the space: the total divided, rounded up (at least 1). */
    long slice(int ranks) {
        return Math.max(1, (total + ranks - 1) / ranks);
    }

    /** Where each position's tensor sits in the flat space, for this group of index {@code group}. */
    List<OptimizerArchives.Span> spans(int group) {
        List<OptimizerArchives.Span> spans = new ArrayList<>();
        for (int i = 0; i < size(); i++) {
            spans.add(new OptimizerArchives.Span(group, positions[i], offsets[i], count(i), shapes.get(i)));
        }
        return spans;
    }

    /** Rank {@code rank}'s shard of {@code ranks}: one tensor of {@link #slice} elements, the real ones first. */
    OptimizerArchives.Span shardSpan(int group, int rank, int ranks) {
        long slice = slice(ranks);
        long start = Math.min(total, rank * slice);
        return new OptimizerArchives.Span(group, 0, start, Math.min(slice, total - start), new long[] {slice});
    }
}
