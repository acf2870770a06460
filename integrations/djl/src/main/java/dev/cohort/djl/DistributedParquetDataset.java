package dev.cohort.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import ai.djl.training.dataset.Batch;
import ai.djl.training.dataset.Dataset;
import ai.djl.translate.Batchifier;
import ai.djl.util.Progress;
import dev.cohort.api.JobEnvironment;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.steps.TrainingSteps;
import dev.cohort.data.DataPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.data.ShardLoader;
import java.util.Iterator;
import java.util.Map;
import java.util.NoSuchElementException;
import java.util.Objects;

/**
 * A DJL {@link Dataset} streamed from a {@link ParquetDataset} by the data module's
 * {@link ShardLoader}, whose reader threads decode ahead. A {@link DistributedTrainer} iterating it
 * ({@code EasyTrain.fit(trainer, ...)} or {@code trainer.iterateDataset(dataset)}) gives each rank
 * its share of every epoch and makes the ranks agree on read errors: it sets the options' rank,
 * world size and error agreement from its backend ({@link LoaderOptions#agreeOnErrors}).
 *
 * <p>A batch holds two arrays, each made once from the loader's direct buffers: the features,
 * float32 {@code [rows, width]}, and the labels, int64 {@code [rows]} (the class indices that
 * {@code SoftmaxCrossEntropyLoss} and {@code Accuracy} take), in a manager of their own that the
 * batch's {@code close()} frees. They are copies: the loader's memory is reused, they are not.
 *
 * <p>Each iteration runs from {@link #position()} to the end of that epoch, after which the position
 * is the next epoch's start; so each {@code EasyTrain.fit} epoch is the next epoch of the data, and
 * a dataset {@link #resumeAt resumed} from a checkpoint ({@link Checkpoints#load(java.nio.file.Path,
 * DistributedTrainer, DistributedParquetDataset)}) hands out exactly the batches the uninterrupted
 * run handed out after it at the same world size, and the rest of the epoch re-split at another.
 * The loader is closed when its epoch ends or fails, when another iteration starts, at
 * {@link #resumeAt}, {@link #close()}, or when the trainer that iterated it is closed.
 */
public final class DistributedParquetDataset implements Dataset, AutoCloseable {

    private final ParquetDataset data;
    private final LoaderOptions options;
    private DataPosition position = DataPosition.start(0);
    private Epoch open;

    private DistributedParquetDataset(ParquetDataset data, LoaderOptions options) {
        this.data = Objects.requireNonNull(data, "data");
        this.options = Objects.requireNonNull(options, "options");
    }

    /**
     * Batches of {@code data} read with {@code options} (batch size per rank, seed, remainder,
     * shuffle buffer, readers, queue depth, timeout), from the start of epoch 0.
     */
    public static DistributedParquetDataset of(ParquetDataset data, LoaderOptions options) {
        return new DistributedParquetDataset(data, options);
    }

    /** Examples per batch on each rank. */
    public int batchSize() {
        return options.batchSize();
    }

    /**
     * Where the next iteration starts: after the last batch handed out, or at the start of the
     * next epoch once an epoch's last batch was handed out. The same on every rank; what a
     * checkpoint written after a batch's step records.
     */
    public DataPosition position() {
        return position;
    }

    /** The next iteration starts at {@code position}; an iteration under way is abandoned. */
    public void resumeAt(DataPosition position) {
        close();
        this.position = Objects.requireNonNull(position, "position");
    }

    /**
     * One epoch from {@link #position()}, this process alone (the options' rank and world size).
     *
     * @throws IllegalStateException on a job of several processes ({@code WORLD_SIZE} above 1),
     *     where every rank would read every example: iterate it with a {@link DistributedTrainer}
     */
    @Override
    public Iterable<Batch> getData(NDManager manager) {
        refuseUnsharded(JobEnvironment.currentVariables());
        return () -> new Epoch(manager, null);
    }

    /** One epoch from {@link #position()}, this rank's share among {@code group}'s ranks. */
    Iterable<Batch> getData(NDManager manager, ProcessGroup group) {
        return () -> new Epoch(manager, group);
    }

    static void refuseUnsharded(Map<String, String> job) {
        String world = job.get(LaunchEnvironment.WORLD_SIZE);
        if (world != null && !world.equals("1")) {
            throw new IllegalStateException("this process is one of " + world + " (WORLD_SIZE) but iterates a "
                    + "DistributedParquetDataset alone, so every rank would read every example: iterate it with a "
                    + "DistributedTrainer (EasyTrain.fit(trainer, ...) or trainer.iterateDataset(dataset))");
        }
    }

    /** Nothing to prepare: {@link ParquetDataset#open} read the footers, the loader reads the rest. */
    @Override
    public void prepare(Progress progress) {}

    /** Closes the loader of an iteration under way; the position stays where its last batch left it. */
    @Override
    public void close() {
        if (open != null) {
            open.loader.close();
            open = null;
        }
    }

    /** One iteration: the rest of {@link #position()}'s epoch. */
    private final class Epoch implements Iterator<Batch> {
        private final NDManager manager;
        private final ShardLoader loader;
        private final int epoch;
        private int handedOut;
        private RuntimeException failure;

        Epoch(NDManager manager, ProcessGroup group) {
            close();
            if (group != null) {
                options.agreeOnErrors(group);
            }
            this.manager = manager;
            this.epoch = position.epoch();
            this.loader = data.loader(options, position);
            open = this;
            if (!loader.hasNext()) {
                finish();
            }
        }

        @Override
        public boolean hasNext() {
            if (failure != null) {
                throw new IllegalStateException(
                        "epoch " + epoch + " failed after " + handedOut + " batches: " + failure.getMessage(), failure);
            }
            if (open != this && loader.hasNext()) {
                throw new IllegalStateException("this iteration of epoch " + epoch + " was abandoned after " + handedOut
                        + " batches (the dataset was iterated again, resumed or closed)");
            }
            return loader.hasNext();
        }

        @Override
        public Batch next() {
            if (!hasNext()) {
                throw new NoSuchElementException("epoch " + epoch + " has no batch left");
            }
            TrainingSteps.Timing taking = TrainingSteps.begin(TrainingSteps.Part.DATA);
            dev.cohort.data.Batch batch;
            try {
                batch = loader.next();
            } catch (RuntimeException e) {
                failure = e;
                close();
                throw e;
            }
            Batch arrays = arrays(batch, handedOut++, loader.steps());
            taking.end(batch.rows());
            position = batch.positionAfter();
            if (!loader.hasNext()) {
                finish();
            }
            return arrays;
        }

        /** The epoch is over: the next iteration starts the next one. */
        private void finish() {
            position = DataPosition.start(epoch + 1);
            close();
        }

        /** The batch's features and labels as arrays in a sub-manager of their own. */
        private Batch arrays(dev.cohort.data.Batch batch, int index, int total) {
            NDManager arrays = manager.newSubManager();
            try {
                int rows = batch.rows();
                NDArray features = arrays.create(batch.features(), new Shape(rows, batch.width()));
                NDArray labels;
                if (batch.hasLongLabels()) {
                    labels = arrays.create(batch.longLabels(), new Shape(rows));
                } else {
                    try (NDArray ints = arrays.create(batch.intLabels(), new Shape(rows))) {
                        labels = ints.toType(DataType.INT64, false);
                    }
                }
                return new Batch(
                        arrays,
                        new NDList(features),
                        new NDList(labels),
                        rows,
                        Batchifier.STACK,
                        Batchifier.STACK,
                        index,
                        total);
            } catch (RuntimeException e) {
                arrays.close();
                throw e;
            }
        }
    }
}
