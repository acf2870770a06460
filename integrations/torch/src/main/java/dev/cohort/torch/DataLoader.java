package dev.cohort.torch;

import java.util.Arrays;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * Mini-batches of a {@link Dataset} in the order its {@link Sampler} gives for each epoch. The
 * last batch of an epoch may be smaller. Distributing a loader (see {@link TorchDistributor})
 * swaps its sampler for a {@link DistributedSampler}; the batch size stays per worker.
 */
public final class DataLoader {

    private final Dataset dataset;
    private final int batchSize;
    private final Sampler sampler;
    private final boolean shuffle;
    private final long seed;

    private DataLoader(Dataset dataset, int batchSize, Sampler sampler, boolean shuffle, long seed) {
        this.dataset = Objects.requireNonNull(dataset, "dataset");
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be >= 1, got " + batchSize);
        }
        this.batchSize = batchSize;
        this.sampler = sampler;
        this.shuffle = shuffle;
        this.seed = seed;
    }

    /** A loader over all of {@code dataset}, shuffled each epoch when asked. */
    public static DataLoader of(Dataset dataset, int batchSize, boolean shuffle, long seed) {
        return new DataLoader(dataset, batchSize, new ShuffleSampler(dataset.size(), shuffle, seed), shuffle, seed);
    }

    /** This loader over rank {@code rank}'s shard of {@code worldSize} (padded, never dropping examples). */
    public DataLoader sharded(int worldSize, int rank) {
        return sharded(worldSize, rank, false);
    }

    /**
     * This loader over rank {@code rank}'s shard of {@code worldSize}: with {@code dropLast} the
     * dataset is cut to a multiple of the world size, else padded by repeating examples (see
     * {@link DistributedSampler}).
     */
    public DataLoader sharded(int worldSize, int rank, boolean dropLast) {
        return new DataLoader(dataset, batchSize,
                new DistributedSampler(dataset.size(), worldSize, rank, shuffle, seed, dropLast), shuffle, seed);
    }

    /**
     * This loader over rank {@code rank}'s shard of {@code worldSize} of each epoch's examples after
     * the first {@code skip}: to go on with an epoch on another number of workers (an elastic job).
     */
    public DataLoader sharded(int worldSize, int rank, boolean dropLast, long skip) {
        return new DataLoader(dataset, batchSize,
                new DistributedSampler(dataset.size(), worldSize, rank, shuffle, seed, dropLast, skip), shuffle, seed);
    }

    /** This loader with batches of {@code size} (per worker, once sharded). */
    public DataLoader withBatchSize(int size) {
        return new DataLoader(dataset, size, sampler, shuffle, seed);
    }

    public Dataset dataset() {
        return dataset;
    }

    public Sampler sampler() {
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
    public Iterable<Batch> epoch(int epoch) {
        return epoch(epoch, 0);
    }

    /** The batches of {@code epoch} from batch {@code firstBatch} on (to resume mid-epoch). */
    public Iterable<Batch> epoch(int epoch, int firstBatch) {
        if (firstBatch < 0 || firstBatch > batchesPerEpoch()) {
            throw new IllegalArgumentException("first batch must be in [0, " + batchesPerEpoch() + "], got " + firstBatch);
        }
        return () -> new Iterator<>() {
            private final long[] order = sampler.indices(epoch);
            private int next = firstBatch;

            @Override
            public boolean hasNext() {
                return (long) next * batchSize < order.length;
            }

            @Override
            public Batch next() {
                if (!hasNext()) {
                    throw new NoSuchElementException();
                }
                int from = next * batchSize;
                int to = Math.min(order.length, from + batchSize);
                next++;
                return dataset.get(Arrays.copyOfRange(order, from, to));
            }
        };
    }
}
