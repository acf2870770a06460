package dev.cohort.djl;

import ai.djl.nn.Parameter;
import ai.djl.nn.ParameterList;
import ai.djl.util.Pair;
import dev.cohort.api.checkpoint.CheckpointFile;
import dev.cohort.api.checkpoint.TrainingPosition;
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
 * steps as the uninterrupted one, bit for bit.
 *
 * <p>Not saved: DJL's engine random generator, which DJL does not expose. Training that draws
 * random numbers after the start (dropout) resumes correctly but not bit-identically; reseed the
 * engine from the position (for example {@code engine.setRandomSeed(seed + step)}) to make it
 * repeatable.
 */
public final class Checkpoints {

    private static final String MAGIC = "cohort-djl-checkpoint";
    private static final int VERSION = 1;

    private Checkpoints() {}

    /** Saves the trainer's model and optimizer state at {@code position}; call on the root worker only. */
    public static void save(Path file, DistributedTrainer trainer, TrainingPosition position) {
        ParameterList parameters = initializedParameters(trainer, "saving");
        Map<String, String> names = new HashMap<>();
        for (Pair<String, Parameter> p : parameters) {
            names.put(p.getValue().getId(), p.getKey());
        }
        CheckpointFile.write(file, tmp -> {
            try (DataOutputStream out = new DataOutputStream(new BufferedOutputStream(Files.newOutputStream(tmp)))) {
                out.writeUTF(MAGIC);
                out.writeInt(VERSION);
                out.writeUTF(ByteOrder.nativeOrder().toString());
                out.writeInt(position.epoch());
                out.writeInt(position.batchInEpoch());
                out.writeLong(position.step());
                out.writeInt(parameters.size());
                for (Pair<String, Parameter> p : parameters) {
                    out.writeUTF(p.getKey());
                    ArrayCodec.write(out, p.getValue().getArray());
                }
                OptimizerState.write(out, trainer.optimizer(), names);
            }
        });
    }

    /**
     * Loads {@code file} into the trainer's (initialized) model and optimizer, on every rank, and
     * returns where to continue.
     */
    public static TrainingPosition load(Path file, DistributedTrainer trainer) {
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
            if (version != VERSION) {
                throw new IllegalArgumentException(
                        source + " has format " + version + "; this Cohort reads format " + VERSION);
            }
            String order = in.readUTF();
            if (!order.equals(ByteOrder.nativeOrder().toString())) {
                throw new IllegalArgumentException(
                        source + " was written on a " + order + " host, this one is " + ByteOrder.nativeOrder());
            }
            TrainingPosition position = new TrainingPosition(in.readInt(), in.readInt(), in.readLong());
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
            return position;
        } catch (EOFException e) {
            throw new IllegalArgumentException(source + " is truncated", e);
        } catch (IOException e) {
            throw new UncheckedIOException("reading " + source + " failed: " + e.getMessage(), e);
        }
    }

    private static ParameterList initializedParameters(DistributedTrainer trainer, String doing) {
        if (!trainer.getModel().getBlock().isInitialized()) {
            throw new IllegalStateException(
                    doing + " a checkpoint needs an initialized model: call " + "trainer.initialize(shapes) first");
        }
        return trainer.getModel().getBlock().getParameters();
    }
}
