package dev.cohort.djl;

import ai.djl.nn.Parameter;
import ai.djl.nn.ParameterList;
import ai.djl.util.Pair;
import dev.cohort.api.checkpoint.CheckpointFile;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.api.steps.CheckpointEvent;
import dev.cohort.data.DataPosition;
import java.io.BufferedInputStream;
import java.io.BufferedOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * Training checkpoints of a {@link DistributedTrainer}'s model: every parameter, the optimizer's
 * state (momentum, Adam's moments, update counts: see {@link OptimizerState}) and the {@link
 * TrainingPosition}, in one file written atomically and durably ({@link CheckpointFile}). The root
 * saves; every rank loads the same file, so all continue from the same state. With the data order
 * a function of (seed, epoch) — {@link DistributedSampler#resumeAt} — a resumed run takes the same
 * steps as the uninterrupted one, bit for bit. Training from a {@link DistributedParquetDataset},
 * save and load with the dataset: the checkpoint then holds its {@link DataPosition} too, with the
 * world size and batch size it was saved at.
 *
 * <p>Not saved: DJL's engine random generator, which DJL does not expose. Training that draws
 * random numbers after the start (dropout) resumes correctly but not bit-identically; reseed the
 * engine from the position (for example {@code engine.setRandomSeed(seed + step)}) to make it
 * repeatable.
 */
public final class Checkpoints {

    private static final String MAGIC = "cohort-djl-checkpoint";
    /** 2 added the data section (a flag, then the data position, world size and batch size); 1 is read too. */
    private static final int VERSION = 2;

    private Checkpoints() {}

    /**
     * Saves the trainer's model and optimizer state at {@code position}: call on the root worker
     * only, or, where the trainer shards the optimizer state (ZeRO), on every rank at the
     * same step: each sends its share to the root, which writes the whole state in the one file (a
     * checkpoint that loads sharded or not, at any world size).
     */
    public static void save(Path file, DistributedTrainer trainer, TrainingPosition position) {
        save(file, trainer, position, null);
    }

    /**
     * Saves as {@link #save(Path, DistributedTrainer, TrainingPosition)}, with {@code dataset}'s
     * {@link DistributedParquetDataset#position()}: call it after a batch's step, before the next batch.
     */
    public static void save(
            Path file, DistributedTrainer trainer, TrainingPosition position, DistributedParquetDataset dataset) {
        save(file, trainer, position, dataset, false);
    }

    /**
     * Saves as {@link #save(Path, DistributedTrainer, TrainingPosition, DistributedParquetDataset)}
     * ({@code dataset} may be null), the file made durable in the background ({@link
     * CheckpointFile#writeAsync}): training pauses while the checkpoint is staged, and goes on
     * while a background thread moves it into place. The next save waits for it, and {@link
     * CheckpointFile#awaitWrites()} waits and throws its failure.
     */
    public static void saveAsync(
            Path file, DistributedTrainer trainer, TrainingPosition position, DistributedParquetDataset dataset) {
        save(file, trainer, position, dataset, true);
    }

    private static void save(
            Path file,
            DistributedTrainer trainer,
            TrainingPosition position,
            DistributedParquetDataset dataset,
            boolean async) {
        ParameterList parameters = initializedParameters(trainer, "saving");
        Map<String, String> names = new HashMap<>();
        for (Pair<String, Parameter> p : parameters) {
            names.put(p.getValue().getId(), p.getKey());
        }
        if (trainer.shardsOptimizerState() && !gatheredToRoot(trainer, parameters, names)) {
            return; // a rank other than the root: its share went to the root
        }
        try {
            write(file, trainer, position, dataset, parameters, names, async);
        } finally {
            if (trainer.shardsOptimizerState()) {
                OptimizerState.retain(trainer.optimizer(), trainer.ownedParameterIds()); // the root's share again
            }
        }
    }

    /**
     * ZeRO: every rank's share of the optimizer state to the root, which merges them into
     * its optimizer for the file; true on the root.
     */
    private static boolean gatheredToRoot(
            DistributedTrainer trainer, ParameterList parameters, Map<String, String> names) {
        trainer.ownedParameterIds(); // every rank has laid out its share before it is saved
        java.util.List<byte[]> shares = dev.cohort.api.collective.ObjectCollectives.gatherBytes(
                trainer.backend().group(),
                OptimizerState.bytes(trainer.optimizer(), names),
                dev.cohort.api.DistributedBackend.ROOT_RANK);
        if (!trainer.backend().isRootWorker()) {
            return false;
        }
        Map<String, Parameter> byName = new LinkedHashMap<>();
        for (Pair<String, Parameter> p : parameters) {
            byName.put(p.getKey(), p.getValue());
        }
        for (int r = 1; r < shares.size(); r++) {
            OptimizerState.merge(
                    shares.get(r), trainer.optimizer(), byName, "rank " + r + "'s share of the optimizer state");
        }
        return true;
    }

    private static void write(
            Path file,
            DistributedTrainer trainer,
            TrainingPosition position,
            DistributedParquetDataset dataset,
            ParameterList parameters,
            Map<String, String> names,
            boolean async) {
        CheckpointFile.Writer writer = tmp -> {
            try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(tmp)))) {
                out.writeUTF(MAGIC);
                out.writeInt(VERSION);
                out.writeUTF(ByteOrder.nativeOrder().toString());
                out.writeInt(position.epoch());
                out.writeInt(position.batchInEpoch());
                out.writeLong(position.step());
                out.writeBoolean(dataset != null);
                if (dataset != null) {
                    out.writeUTF(dataset.position().toString());
                    out.writeInt(trainer.backend().worldSize());
                    out.writeInt(dataset.batchSize());
                }
                out.writeInt(parameters.size());
                for (Pair<String, Parameter> p : parameters) {
                    out.writeUTF(p.getKey());
                    ArrayCodec.write(out, p.getValue().getArray());
                }
                OptimizerState.write(out, trainer.optimizer(), names);
            }
        };
        if (async) {
            CheckpointFile.writeAsync(file, writer);
        } else {
            CheckpointFile.write(file, writer);
        }
    }

    /**
     * Loads {@code file} into the trainer's (initialized) model and optimizer, on every rank, and
     * returns where to continue.
     *
     * @throws IllegalArgumentException when the checkpoint holds a data position (load it with the
     *     dataset), or is of another model or optimizer
     */
    public static TrainingPosition load(Path file, DistributedTrainer trainer) {
        return load(file, trainer, null);
    }

    /**
     * Loads as {@link #load(Path, DistributedTrainer)} and resumes {@code dataset} at the data
     * position the checkpoint holds: at the world size it was saved at, exactly where the saved run
     * stood (which needs the same batch size); at another, the rest of the epoch re-split among
     * the ranks.
     *
     * @throws IllegalArgumentException when the checkpoint holds no data position, or was saved at
     *     this world size with another batch size
     */
    public static TrainingPosition load(Path file, DistributedTrainer trainer, DistributedParquetDataset dataset) {
        return CheckpointEvent.load(file, () -> read(file, trainer, dataset));
    }

    private static TrainingPosition read(Path file, DistributedTrainer trainer, DistributedParquetDataset dataset) {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("checkpoint " + file + " does not exist");
        }
        ParameterList parameters = initializedParameters(trainer, "loading");
        Map<String, Parameter> byName = new LinkedHashMap<>();
        for (Pair<String, Parameter> p : parameters) {
            byName.put(p.getKey(), p.getValue());
        }
        String source = "checkpoint " + file;
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(Files.newInputStream(file)))) {
            if (!MAGIC.equals(in.readUTF())) {
                throw new IllegalArgumentException(source + " is not a Cohort DJL checkpoint");
            }
            int version = in.readInt();
            if (version != 1 && version != VERSION) {
                throw new IllegalArgumentException(
                        source + " has format " + version + "; this Cohort reads formats 1 and " + VERSION);
            }
            String order = in.readUTF();
            if (!order.equals(ByteOrder.nativeOrder().toString())) {
                throw new IllegalArgumentException(
                        source + " was written on a " + order + " host, this one is " + ByteOrder.nativeOrder());
            }
            TrainingPosition position = new TrainingPosition(in.readInt(), in.readInt(), in.readLong());
            DataPosition data = version > 1 && in.readBoolean()
                    ? checkedDataPosition(in, source, trainer.backend().worldSize(), dataset)
                    : null;
            if (data == null && dataset != null) {
                throw new IllegalArgumentException(source + " holds no data position (it was saved without a dataset): "
                        + "load it with Checkpoints.load(file, trainer)");
            }
            if (data != null && dataset == null) {
                throw new IllegalArgumentException(source + " holds a data position (" + data + "): load it with "
                        + "Checkpoints.load(file, trainer, dataset), so the dataset continues from there");
            }
            int count = in.readInt();
            if (count != byName.size()) {
                throw new IllegalArgumentException(source + " holds " + count + " parameters, this model has "
                        + byName.size() + ": the checkpoint is of another model");
            }
            for (int i = 0; i < count; i++) {
                String name = in.readUTF();
                Parameter p = byName.get(name);
                if (p == null) {
                    throw new IllegalArgumentException(source + " holds parameter '" + name + "', which this model "
                            + "does not have: the checkpoint is of another model");
                }
                ArrayCodec.readInto(in, p.getArray(), "parameter '" + name + "'", source);
            }
            OptimizerState.read(in, trainer.optimizer(), byName, source);
            if (trainer.shardsOptimizerState()) {
                OptimizerState.retain(trainer.optimizer(), trainer.ownedParameterIds()); // this rank's share only
            }
            if (dataset != null) {
                dataset.resumeAt(data);
            }
            return position;
        } catch (EOFException e) {
            throw new IllegalArgumentException(source + " is truncated", e);
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + source + " failed: " + e.getMessage(), e);
        }
    }

    /** The data section's position, once its batch size is checked against {@code dataset}'s. */
    private static DataPosition checkedDataPosition(
            DataInputStream in, String source, int worldSize, DistributedParquetDataset dataset) throws IOException {
        DataPosition data = DataPosition.parse(in.readUTF());
        int savedWorld = in.readInt();
        int savedBatch = in.readInt();
        if (dataset != null && savedWorld == worldSize && savedBatch != dataset.batchSize()) {
            throw new IllegalArgumentException(source + " was saved at world size " + worldSize + " with batches of "
                    + savedBatch + " per rank, this dataset's are of " + dataset.batchSize()
                    + ": a run resumed at the same world size sees the saved run's batches only with the same batch "
                    + "size (LoaderOptions.batchSize(" + savedBatch + "))");
        }
        return data;
    }

    private static ParameterList initializedParameters(DistributedTrainer trainer, String doing) {
        if (!trainer.getModel().getBlock().isInitialized()) {
            throw new IllegalStateException(
                    doing + " a checkpoint needs an initialized model: call " + "trainer.initialize(shapes) first");
        }
        return trainer.getModel().getBlock().getParameters();
    }
}
