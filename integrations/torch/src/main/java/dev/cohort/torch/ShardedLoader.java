package dev.cohort.torch;

import dev.cohort.api.steps.TrainingSteps;
import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * Mini-batches of a {@link Samples} in the order its {@link IndexSampler} gives for each epoch. The
 * last batch of an epoch may be smaller. Distributing a loader (see {@link TorchDistributor})
 * swaps its sampler for a {@link ShardSampler}; the batch size stays per worker.
 */
public final class ShardedLoader {

    private final Samples dataset;
    private final int batchSize;
    private final IndexSampler sampler;
    private final boolean shuffle;
    private final long seed;

    private ShardedLoader(Samples dataset, int batchSize, IndexSampler sampler, boolean shuffle, long seed) {
        this.dataset = Objects.requireNonNull(dataset, "dataset");
        this.batchSize = checkedBatchSize(batchSize);
        this.sampler = sampler;
        this.shuffle = shuffle;
        this.seed = seed;
    }

    private static int checkedBatchSize(int size) {
        if (size < 1) {
            throw new IllegalArgumentException("batch size must be >= 1, got " + size);
        }
        return size;
    }

    /** A loader over all of {@code dataset}, shuffled each epoch when asked. */
    public static ShardedLoader of(Samples dataset, int batchSize, boolean shuffle, long seed) {
        return new ShardedLoader(dataset, batchSize, new ShuffledSampler(dataset.size(), shuffle, seed), shuffle, seed);
    }

    /** This loader over rank {@code rank}'s shard of {@code worldSize} (padded, never dropping examples). */
    public ShardedLoader sharded(int worldSize, int rank) {
        return sharded(worldSize, rank, false);
    }

    /**
     * This loader over rank {@code rank}'s shard of {@code worldSize}: with {@code dropLast} the
     * dataset is cut to a multiple of the world size, else padded by repeating examples (see
     * {@link ShardSampler}).
     */
    public ShardedLoader sharded(int worldSize, int rank, boolean dropLast) {
        return new ShardedLoader(
                dataset,
                batchSize,
                new ShardSampler(dataset.size(), worldSize, rank, shuffle, seed, dropLast),
                shuffle,
                seed);
    }

    /**
     * This loader over rank {@code rank}'s shard of {@code worldSize} of each epoch's examples after
     * the first {@code skip}: to go on with an epoch on another number of workers (an elastic job).
     */
    public ShardedLoader sharded(int worldSize, int rank, boolean dropLast, long skip) {
        return new ShardedLoader(
                dataset,
                batchSize,
                new ShardSampler(dataset.size(), worldSize, rank, shuffle, seed, dropLast, skip),
                shuffle,
                seed);
    }

    /** This loader with batches of {@code size} (per worker, once sharded). */
    public ShardedLoader withBatchSize(int size) {
        return new ShardedLoader(dataset, size, sampler, shuffle, seed);
    }

    public Samples dataset() {
        return dataset;
    }

    public IndexSampler sampler() {
        return sampler;
    }

    public int batchSize() {
        return batchSize;
    }

    /** Batches per epoch on this process. */
    public int batchesPerEpoch() {
        return (int) ((sampler.length() + batchSize - 1) / batchSize);
    }

    /** The batches of {@code epoch}. */
    public Iterable<MiniBatch> epoch(int epoch) {
        return epoch(epoch, 0);
    }

    /** The batches of {@code epoch} from batch {@code firstBatch} on (to resume mid-epoch). */
    public Iterable<MiniBatch> epoch(int epoch, int firstBatch) {
        if (firstBatch < 0 || firstBatch > batchesPerEpoch()) {
            throw new IllegalArgumentException(
                    "first batch must be in [0, " + batchesPerEpoch() + "], got " + firstBatch);
        }
        return () -> new Iterator<>() {
            private final long[] order = sampler.indices(epoch);
            private int next = firstBatch;

            @Override
            public boolean hasNext() {
                return (long) next * batchSize < order.length;
            }

            @Override
            public MiniBatch next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                TrainingSteps.Timing taking = TrainingSteps.begin(TrainingSteps.Part.DATA);
                int from = next * batchSize;
                int to = Math.min(order.length, from + batchSize);
                next++;
                MiniBatch batch = dataset.get(Arrays.copyOfRange(order, from, to));
                taking.end(to - from);
                return batch;
            }
        };
    }
}
