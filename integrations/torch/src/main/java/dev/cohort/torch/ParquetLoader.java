package dev.cohort.torch;

import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.steps.TrainingSteps;
import dev.cohort.data.Batch;
import dev.cohort.data.DataPosition;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.data.Remainder;
import dev.cohort.data.ShardLoader;
import java.time.Duration;
import java.util.Iterator;
import java.util.NoSuchElementException;
import java.util.Objects;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.MemoryFormatOptional;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * Mini-batches streamed from a {@link ParquetDataset} (Parquet files on local disk or any Hadoop
 * file system): each epoch a {@link ShardLoader} decodes this rank's share ahead on background
 * threads, and each batch is copied once from its native buffers into a float tensor
 * {@code [rows, width]} of inputs and an int64 tensor of targets.
 *
 * <p>{@link TorchDistributor} shards it as it shards a {@link ShardedLoader}: the loader it
 * returns reads rank r's share of world W ({@link Remainder#DROP} with option
 * {@value TorchDistributor#DROP_LAST}, else {@link Remainder#PAD}) and, when W > 1, agrees on
 * read errors with the other ranks (one 1-int allreduce per batch; {@link
 * LoaderOptions#agreeOnErrors}), so a bad row group stops every rank with the same error instead
 * of leaving the others waiting in the gradient allreduce. The loader passed to {@code
 * distribute()} refuses to start epochs from then on: iterating it instead of the one returned
 * would feed every rank the whole dataset.
 *
 * <pre>{@code
 * ParquetLoader data = ParquetLoader.of(ParquetDataset.open(List.of("hdfs://nn/fashion"),
 *         ColumnMapping.list("features", "label")), new LoaderOptions().batchSize(64).seed(42));
 * TorchTraining<Net, ParquetLoader, Object> d = TorchTraining.distribute(backend, net, sgd, data);
 * try (ParquetLoader.Epoch epoch = d.trainingData().epoch(from)) { // from: DataPosition.start(e), or a checkpoint's
 *     for (MiniBatch b : epoch) {
 *         // ... a step; a checkpoint records epoch.position()
 *     }
 * }
 * }</pre>
 */
public final class ParquetLoader {

    /** Set once distribute() sharded this loader: its epochs are refused from then on. */
    private volatile boolean handedToDistribute;
    /** The epoch started last: ended when another starts. */
    private Epoch open;

    private final ParquetDataset dataset;
    private final LoaderOptions options;

    private ParquetLoader(ParquetDataset dataset, LoaderOptions options) {
        this.dataset = dataset;
        this.options = options;
    }

    /**
     * A loader of {@code dataset} read as {@code options} say (batch size per rank, seed, shuffle
     * buffer, readers, queue depth, timeout); a copy of the options is kept. Undistributed, it reads
     * the share the options name (by default all of the dataset, as rank 0 of 1).
     */
    public static ParquetLoader of(ParquetDataset dataset, LoaderOptions options) {
        Objects.requireNonNull(dataset, "dataset");
        Objects.requireNonNull(options, "options");
        return new ParquetLoader(dataset, options.copy());
    }

    /**
     * This loader over rank {@code rank}'s share of {@code worldSize}: {@code dropLast} leaves out
     * what does not divide among the ranks, else the last shares are padded; with a {@code group}
     * (of that rank and size) read errors are agreed on. What {@code distribute()} calls.
     */
    ParquetLoader sharded(int worldSize, int rank, boolean dropLast, ProcessGroup group) {
        handedToDistribute = true;
        LoaderOptions mine = options.copy().rank(rank, worldSize).remainder(dropLast ? Remainder.DROP : Remainder.PAD);
        if (group != null) {
            mine.agreeOnErrors(group);
        }
        return new ParquetLoader(dataset, mine);
    }

    /** The Parquet files this loader reads. */
    public ParquetDataset dataset() {
        return dataset;
    }

    /** {@code epoch} from its start. */
    public Epoch epoch(int epoch) {
        return epoch(DataPosition.start(epoch));
    }

    /**
     * The epoch of {@code from}, from that position on: a saved position at this world size gives
     * exactly the batches the uninterrupted run gave after it; at another world size the epoch's
     * remaining examples are split among the ranks now ({@link DataPosition}). Ends the epoch this
     * loader started before, if still open (its threads stop; using it then throws).
     *
     * @throws IllegalStateException when this loader was passed to {@code distribute()}
     */
    public synchronized Epoch epoch(DataPosition from) {
        Objects.requireNonNull(from, "from");
        if (handedToDistribute) {
            throw new IllegalStateException("this loader was passed to distribute(), which returned this rank's "
                    + "share of it: iterate the loader distribute() returned (Distributed.trainingData()); this one "
                    + "reads the same examples on every rank");
        }
        if (open != null) {
            open.close();
        }
        open = new Epoch(dataset.loader(options, from));
        return open;
    }

    @Override
    public String toString() {
        return "ParquetLoader[" + dataset.examples() + " examples in "
                + dataset.files().size() + " file(s)]";
    }

    /**
     * One epoch's batches on this rank, each a {@link MiniBatch} whose tensors own their memory;
     * iterate it once. Its threads stop at the last batch, at {@link #close()}, or when the loader
     * starts another epoch.
     */
    public static final class Epoch implements Iterable<MiniBatch>, AutoCloseable {

        private final ShardLoader loader;
        private boolean iterated;
        private boolean closed;

        private Epoch(ShardLoader loader) {
            this.loader = loader;
        }

        /** The batches this epoch hands out in all (from its start position on); the same on every rank. */
        public int steps() {
            return loader.steps();
        }

        /** Where the epoch stands after the last batch handed out: what a checkpoint after its step records. */
        public DataPosition position() {
            return loader.position();
        }

        /** How long the training thread waited for batches so far. */
        public Duration waitTime() {
            return loader.waitTime();
        }

        /** The batches; one iterator per epoch. */
        @Override
        public synchronized Iterator<MiniBatch> iterator() {
            if (iterated) {
                throw new IllegalStateException("an epoch is iterated once; start another with ParquetLoader.epoch");
            }
            iterated = true;
            return new Iterator<>() {
                @Override
                public boolean hasNext() {
                    boolean more = !closed && loader.hasNext();
                    if (!more) {
                        close();
                    }
                    return more;
                }

                @Override
                public MiniBatch next() {
                    if (closed) {
                        throw new IllegalStateException("this epoch was closed (or the loader started another)");
                    }
                    if (!loader.hasNext()) {
                        close();
                        throw new NoSuchElementException("the epoch's " + loader.steps() + " batches were handed out");
                    }
                    TrainingSteps.Timing taking = TrainingSteps.begin(TrainingSteps.Part.DATA);
                    Batch batch = loader.next();
                    MiniBatch tensors = tensors(batch);
                    taking.end(batch.rows());
                    return tensors;
                }
            };
        }

        /** Stops the epoch's reader threads and waits for them. */
        @Override
        public synchronized void close() {
            if (!closed) {
                closed = true;
                loader.close();
            }
        }
    }

    /** The batch's features and labels copied into tensors of their own (one copy each, no Java loop). */
    static MiniBatch tensors(Batch batch) {
        long rows = batch.rows();
        Tensor features = torch.from_blob(
                new Pointer(batch.features()),
                new long[] {rows, batch.width()},
                new TensorOptions(torch.ScalarType.Float));
        Tensor labels = batch.hasLongLabels()
                ? torch.from_blob(
                        new Pointer(batch.longLabels()), new long[] {rows}, new TensorOptions(torch.ScalarType.Long))
                : torch.from_blob(
                        new Pointer(batch.intLabels()), new long[] {rows}, new TensorOptions(torch.ScalarType.Int));
        Tensor targets = labels.to(new TensorOptions(torch.ScalarType.Long), false, true, new MemoryFormatOptional());
        return new MiniBatch(features.clone(), targets);
    }
}
