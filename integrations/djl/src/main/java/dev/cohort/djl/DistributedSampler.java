package dev.cohort.djl;

import ai.djl.training.dataset.RandomAccessDataset;
import ai.djl.training.dataset.Sampler;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import java.util.ArrayList;
import java.util.Collections;
import java.util.Iterator;
import java.util.List;
import java.util.Random;

/**
 * A DJL {@link Sampler} that gives each rank its own shard of a dataset, as PyTorch's
 * {@code DistributedSampler}: each epoch the indices are shuffled from a seed every rank shares
 * (the seed plus the epoch number), then rank r takes every p-th of them, starting at r. So the
 * shards are disjoint, cover the dataset, and are reshuffled each epoch alike on every rank. The
 * dataset is padded (its first indices again) or cut to a multiple of p, so every rank runs the
 * same number of batches per epoch; a shard's last batch may be shorter unless {@code dropLast}.
 *
 * <p>Each call of {@link #sample} is one epoch (DJL asks once per pass over the data); {@link
 * #setEpoch} sets the next one, {@link #resumeAt} the next one and its first batch, as after a resume,
 * and {@link #startAfter} the rest of an epoch that ranks of another world size began (an elastic
 * run's re-formed group).
 */
public final class DistributedSampler implements Sampler {

    private final int rank;
    private final int ranks;
    private final int batchSize;
    private final boolean shuffle;
    private final long seed;
    private final boolean pad;
    private final boolean dropLast;
    private int epoch;
    private int firstBatch;
    /** Examples of the next epoch's order that ranks before a re-form took already. */
    private long examplesDone;

    /**
     * @param backend   an initialized backend: its rank and world size
     * @param batchSize each rank's batch
     * @param shuffle   reshuffle every epoch (from {@code seed}), else dataset order
     * @param seed      the seed every rank shares
     * @param pad       pad the dataset to a multiple of the world size with its first indices
     *                  (else drop the last {@code size mod p} indices)
     * @param dropLast  drop a shard's last batch when it is shorter than {@code batchSize}
     */
    public DistributedSampler(
            DistributedBackend backend, int batchSize, boolean shuffle, long seed, boolean pad, boolean dropLast) {
        this(backend.rank(), backend.worldSize(), batchSize, shuffle, seed, pad, dropLast);
    }

    /** Rank {@code rank} of {@code ranks}. */
    DistributedSampler(int rank, int ranks, int batchSize, boolean shuffle, long seed, boolean pad, boolean dropLast) {
        if (batchSize < 1) {
            throw new IllegalArgumentException("batch size must be >= 1, got " + batchSize);
        }
        this.rank = rank;
        this.ranks = ranks;
        this.batchSize = batchSize;
        this.shuffle = shuffle;
        this.seed = seed;
        this.pad = pad;
        this.dropLast = dropLast;
    }

    /** Shuffled from {@code seed}, padded, short last batches kept. */
    public DistributedSampler(DistributedBackend backend, int batchSize, boolean shuffle, long seed) {
        this(backend, batchSize, shuffle, seed, true, false);
    }

    /** The epoch the next {@link #sample} call shuffles for. */
    public void setEpoch(int epoch) {
        this.epoch = epoch;
    }

    public int epoch() {
        return epoch;
    }

    /**
     * Continues where a checkpoint left off: the next {@link #sample} call is epoch
     * {@code position.epoch()} from its batch {@code position.batchInEpoch()}; the epochs after it
     * start from their first batch.
     */
    public void resumeAt(TrainingPosition position) {
        startAt(position.epoch(), position.batchInEpoch());
    }

    /** The next {@link #sample} call is epoch {@code epoch} from its batch {@code firstBatch}. */
    public void startAt(int epoch, int firstBatch) {
        if (epoch < 0 || firstBatch < 0) {
            throw new IllegalArgumentException("epoch and batch are never negative: " + epoch + "/" + firstBatch);
        }
        this.epoch = epoch;
        this.firstBatch = firstBatch;
    }

    /**
     * The next {@link #sample} call is the rest of epoch {@code epoch} after the first
     * {@code examplesDone} examples of its order, split among this sampler's ranks: where an elastic
     * run's group of another size stood when it lost a worker. With the ranks taking every p-th
     * index of the order, a group that trained k batches of b examples each took exactly the first
     * k·b·p, whatever p was.
     */
    public void startAfter(int epoch, long examplesDone) {
        if (epoch < 0 || examplesDone < 0) {
            throw new IllegalArgumentException(
                    "epoch and examples done are never negative: " + epoch + "/" + examplesDone);
        }
        this.epoch = epoch;
        this.firstBatch = 0;
        this.examplesDone = examplesDone;
    }

    /** This rank's shard of {@code size} indices for {@code epoch}, in the order it visits them. */
    List<Long> shard(long size, int epoch) {
        return shard(size, epoch, 0);
    }

    /** As {@link #shard(long, int)}, of the order's indices after the first {@code skip}. */
    private List<Long> shard(long size, int epoch, long skip) {
        if (size > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("datasets above 2^31 records are not supported, got " + size);
        }
        int n = (int) size;
        List<Long> order = new ArrayList<>(n);
        for (long i = 0; i < n; i++) {
            order.add(i);
        }
        if (shuffle) {
            Collections.shuffle(order, new Random(seed + epoch));
        }
        if (skip > 0) {
            order = new ArrayList<>(order.subList((int) Math.min(skip, n), n));
            n = order.size();
        }
        int total;
        if (pad) {
            total = (n + ranks - 1) / ranks * ranks;
            for (int i = 0; order.size() < total && n > 0; i++) {
                order.add(order.get(i % n));
            }
        } else {
            total = n / ranks * ranks;
        }
        List<Long> mine = new ArrayList<>(total / ranks);
        for (int i = rank; i < total; i += ranks) {
            mine.add(order.get(i));
        }
        return mine;
    }

    @Override
    public Iterator<List<Long>> sample(RandomAccessDataset dataset) {
        return batches(dataset.size());
    }

    /** One epoch's batches of this rank's shard of {@code size} records; the next call is the next epoch. */
    Iterator<List<Long>> batches(long size) {
        List<Long> mine = shard(size, epoch++, examplesDone);
        examplesDone = 0;
        List<List<Long>> batches = new ArrayList<>();
        int skip = firstBatch;
        firstBatch = 0;
        for (int from = skip * batchSize; from < mine.size(); from += batchSize) {
            int to = Math.min(mine.size(), from + batchSize);
            if (to - from < batchSize && dropLast) {
                break;
            }
            batches.add(mine.subList(from, to));
        }
        return batches.iterator();
    }

    @Override
    public int getBatchSize() {
        return batchSize;
    }
}
