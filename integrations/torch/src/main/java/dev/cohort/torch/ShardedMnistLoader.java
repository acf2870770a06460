package dev.cohort.torch;

import org.bytedeco.pytorch.DataLoaderOptions;
import org.bytedeco.pytorch.ExampleIterator;
import org.bytedeco.pytorch.ExampleStack;
import org.bytedeco.pytorch.Generator;
import org.bytedeco.pytorch.MNISTMapDataset;
import org.bytedeco.pytorch.MNISTRandomDataLoader;
import org.bytedeco.pytorch.RandomSampler;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * libtorch's own MNIST loader ({@link MNISTRandomDataLoader}, the loader of JavaCPP's SimpleMNIST
 * sample) over one rank's shard, so a program keeps its loop: {@code for (ExampleIterator it =
 * loader.begin(); !it.equals(loader.end()); it = it.increment())}. {@link TorchDistributor}
 * shards it as it shards a {@link ShardedLoader}: each epoch's examples are the {@link
 * ShardSampler}'s (disjoint shards, reshuffled each epoch from a shared seed, padded or with
 * {@code dropLast} cut so every rank runs the same steps).
 *
 * <p>libtorch's loader takes only its own {@link RandomSampler}, so the shard lives in tensors of
 * this loader's own, given to a copy of the dataset: each {@link #begin()} starts the next epoch
 * by copying that epoch's examples into them, placed so the sampler's permutation (drawn from the
 * default generator, as it would be) visits them in the {@link ShardSampler}'s order. Global step
 * k of n ranks with batch b thus trains positions [k b n, (k + 1) b n) of the epoch's permutation,
 * as {@link ShardedLoader} does. The first {@code begin()} starts epoch 0; {@link #setEpoch} picks
 * the next one (to resume).
 */
public final class ShardedMnistLoader extends MNISTRandomDataLoader {

    /**
     * Loaders in one process draw from the one default generator: one at a time, both a sampler's
     * construction (libtorch's {@code RandomSampler} draws a permutation as it is made) and an
     * epoch's prediction and draw. Another thread drawing from it between the prediction and the
     * sampler's draw (ranks as threads of one JVM initializing models) changes only the order
     * inside this shard, never which examples it holds.
     */
    private static final Object GENERATOR = new Object();

    private final MNISTMapDataset dataset;
    private final DataLoaderOptions options;
    private final long seed;
    private final ShardSampler sampler;
    private final Tensor images;
    private final Tensor targets;
    private int nextEpoch;

    private ShardedMnistLoader(
            MNISTMapDataset dataset, DataLoaderOptions options, long seed, ShardSampler sampler, Shard shard) {
        super(shard.dataset, newSampler(sampler.length()), options);
        this.dataset = dataset;
        this.options = options;
        this.seed = seed;
        this.sampler = sampler;
        this.images = shard.images;
        this.targets = shard.targets;
    }

    /**
     * libtorch's sampler over {@code size} examples; the permutation its constructor draws leaves
     * the default generator as it was, so making a loader changes no program's random stream.
     */
    private static RandomSampler newSampler(long size) {
        synchronized (GENERATOR) {
            Generator generator = torch.getDefaultCPUGenerator();
            Tensor before = generator.get_state();
            RandomSampler sampler = new RandomSampler(size);
            generator.set_state(before);
            return sampler;
        }
    }

    /**
     * The whole {@code dataset} in batches of {@code options}' size (per rank once distributed),
     * reshuffled each epoch from {@code seed}: what {@code new MNISTRandomDataLoader(dataset, new
     * RandomSampler(size), options)} yields, in an order every rank can compute.
     */
    public static ShardedMnistLoader of(MNISTMapDataset dataset, DataLoaderOptions options, long seed) {
        if (dataset == null || dataset.isNull()) {
            throw new IllegalArgumentException("the MNIST dataset is " + (dataset == null ? "null" : "freed")
                    + ": pass new MNIST(folder).map(new ExampleStack()), alive while the loader is");
        }
        if (options == null || options.isNull() || options.batch_size().get() < 1) {
            throw new IllegalArgumentException(
                    "the loader options need a batch size >= 1: pass new DataLoaderOptions(64)");
        }
        long size = dataset.size().get();
        return shard(dataset, options, seed, new ShardSampler(size, 1, 0, true, seed, false));
    }

    /**
     * This loader over rank {@code rank}'s shard of {@code worldSize}, with a fresh epoch count:
     * with {@code dropLast} the dataset is cut to a multiple of the world size, else padded by
     * repeating examples ({@link ShardSampler}).
     */
    public ShardedMnistLoader sharded(int worldSize, int rank, boolean dropLast) {
        long size = dataset.size().get();
        return shard(dataset, options, seed, new ShardSampler(size, worldSize, rank, true, seed, dropLast));
    }

    private static ShardedMnistLoader shard(
            MNISTMapDataset dataset, DataLoaderOptions options, long seed, ShardSampler sampler) {
        Tensor all = dataset.dataset().images();
        long[] shape = all.sizes().vec().get();
        shape[0] = sampler.length();
        // Uninitialized until the first begin(): a loader never iterated costs no resident memory.
        Tensor images = all.new_empty(shape);
        Tensor targets = dataset.dataset().targets().new_empty(sampler.length());
        MNISTMapDataset copy = new MNISTMapDataset(dataset.dataset(), new ExampleStack());
        copy.dataset().images().put(images); // the copy's tensors become this shard's; the program's stay
        copy.dataset().targets().put(targets);
        return new ShardedMnistLoader(dataset, options, seed, sampler, new Shard(copy, images, targets));
    }

    private record Shard(MNISTMapDataset dataset, Tensor images, Tensor targets) {}

    /** Makes the next {@link #begin()} start {@code epoch} (PyTorch's {@code set_epoch}). */
    public void setEpoch(int epoch) {
        if (epoch < 0) {
            throw new IllegalArgumentException("epoch must be >= 0, got " + epoch);
        }
        nextEpoch = epoch;
    }

    /** Examples this rank visits per epoch. */
    long examplesPerEpoch() {
        return sampler.length();
    }

    /** Starts the next epoch: this rank's examples of it, then libtorch's iterator over them. */
    @Override
    public ExampleIterator begin() {
        long[] mine = sampler.indices(nextEpoch++);
        synchronized (GENERATOR) {
            Generator generator = torch.getDefaultCPUGenerator();
            Tensor before = generator.get_state();
            long[] visit = new long[mine.length]; // what the sampler's reset will draw
            torch.randperm(mine.length).data_ptr_long().get(visit);
            generator.set_state(before);
            long[] placed = new long[mine.length];
            for (int j = 0; j < mine.length; j++) {
                placed[(int) visit[j]] = mine[j];
            }
            Tensor index = torch.tensor(placed);
            torch.index_select_out(images, dataset.dataset().images(), 0, index);
            torch.index_select_out(targets, dataset.dataset().targets(), 0, index);
            return super.begin();
        }
    }

    @Override
    public String toString() {
        return "ShardedMnistLoader[" + sampler + ", batch "
                + options.batch_size().get() + "]";
    }
}
