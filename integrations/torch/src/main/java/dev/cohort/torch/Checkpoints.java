package dev.cohort.torch;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.CheckpointFile;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.api.collective.ProcessGroup;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.function.IntPredicate;
import java.util.stream.Stream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * Training checkpoints: model parameters and buffers, optimizer state (momentum and the like),
 * the {@link TrainingPosition} and the state of libtorch's default CPU random generator (dropout,
 * random initialization; the root's state, restored on every rank), in one libtorch archive,
 * written atomically and durably ({@link CheckpointFile}).
 * Data order and any randomness are functions of (seed, epoch), so the position is all a resumed
 * run needs to continue exactly as the uninterrupted run would.
 *
 * <p>Under ZeRO ({@link TorchDistributor#ZERO_STAGE}) each rank holds only its shard of the
 * optimizer state: {@link #saveSharded} (on every rank) writes each rank's shard beside the
 * checkpoint file, {@code <file>.optimizer-<step>.<rank>-of-<world>}, and the root the model,
 * position and generator state in the file itself, last. {@link #load} takes each rank's share
 * of the state from whichever shards hold it, so a checkpoint resumes at another world size
 * (re-sharded), without ZeRO, or from an unsharded checkpoint into a sharded run. Every rank reads
 * every shard: the checkpoint's directory must be one file system for all of them.
 */
public final class Checkpoints {

    private Checkpoints() {
    }

    /**
     * Saves atomically and durably ({@link CheckpointFile}); call on the root worker only.
     *
     * @throws IllegalArgumentException for an optimizer whose state is sharded (ZeRO, more than one
     *                                  rank): use {@link #saveSharded} on every rank
     */
    public static void save(Path file, Module model, Optimizer optimizer, TrainingPosition position) {
        ZeroShards zero = optimizer instanceof DistributedOptimizer d ? d.shards() : null;
        if (zero != null && zero.group().size() > 1) {
            throw new IllegalArgumentException("the optimizer's state is sharded across " + zero.group().size()
                    + " ranks (ZeRO stage " + zero.stage() + "): call Checkpoints.saveSharded on every rank");
        }
        writeMain(file, model, optimizer, position, 0);
    }

    /**
     * Saves a checkpoint of a ZeRO optimizer: call on every rank, at the same step. Each rank
     * writes its shard of the optimizer state beside {@code file}; once every shard is on disk the
     * root writes {@code file} (the model, the position, the generator state and the world size)
     * and removes the shards of earlier steps; on return the checkpoint is whole on every rank. A
     * crash before the root's write leaves the previous checkpoint whole.
     *
     * @throws IllegalArgumentException unless {@code optimizer} is a {@link DistributedOptimizer} with ZeRO
     */
    public static void saveSharded(Path file, Module model, Optimizer optimizer, TrainingPosition position) {
        ZeroShards zero = optimizer instanceof DistributedOptimizer d ? d.shards() : null;
        if (zero == null) {
            throw new IllegalArgumentException("saveSharded is for an optimizer distributed with option "
                    + TorchDistributor.ZERO_STAGE + " 1 or 2; save an unsharded one with Checkpoints.save on the root");
        }
        ProcessGroup group = zero.group();
        CheckpointFile.write(shardFile(file, position.step(), group.rank(), group.size()), tmp -> {
            try (PointerScope temporaries = new PointerScope()) {
                OutputArchive archive = new OutputArchive();
                optimizer.save(archive);
                archive.save_to(tmp.toString());
            }
        });
        group.barrier().await();
        if (group.rank() == DistributedBackend.ROOT_RANK) {
            writeMain(file, model, null, position, group.size());
            removeShardsBefore(file, position.step());
        }
        group.barrier().await();
    }

    /** {@code <file>.optimizer-<step>.<rank>-of-<world>}. */
    static Path shardFile(Path file, long step, int rank, int world) {
        return file.resolveSibling(file.getFileName() + ".optimizer-" + step + "." + rank + "-of-" + world);
    }

    private static void removeShardsBefore(Path file, long step) {
        String prefix = file.getFileName() + ".optimizer-";
        Path dir = file.toAbsolutePath().getParent();
        try (Stream<Path> entries = Files.list(dir)) {
            for (Path p : (Iterable<Path>) entries::iterator) {
                String name = p.getFileName().toString();
                if (!name.startsWith(prefix)) {
                    continue;
                }
                String rest = name.substring(prefix.length());
                int dot = rest.indexOf('.');
                try {
                    if (dot > 0 && Long.parseLong(rest.substring(0, dot)) < step) {
                        Files.deleteIfExists(p);
                    }
                } catch (NumberFormatException notAShard) {
                    // another file that happens to share the prefix: left alone
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException("removing old optimizer shards beside " + file + " failed: " + e.getMessage(), e);
        }
    }

    /** The checkpoint file: the optimizer's state in it, or (null optimizer) in {@code shards} files beside it. */
    private static void writeMain(Path file, Module model, Optimizer optimizer, TrainingPosition position, int shards) {
        CheckpointFile.write(file, tmp -> {
            try {
                OutputArchive archive = new OutputArchive();
                OutputArchive modelArchive = new OutputArchive();
                model.save(modelArchive);
                archive.write("model", modelArchive);
                if (optimizer != null) {
                    OutputArchive optimizerArchive = new OutputArchive();
                    optimizer.save(optimizerArchive);
                    archive.write("optimizer", optimizerArchive);
                } else {
                    archive.write("shards", torch.tensor(new long[] {shards}));
                }
                archive.write("position", torch.tensor(new long[] {position.epoch(), position.batchInEpoch(),
                        position.step()}));
                archive.write("rng", torch.getDefaultCPUGenerator().get_state());
                archive.save_to(tmp.toString());
            } catch (RuntimeException e) {
                throw new IllegalStateException("saving checkpoint " + file + " failed: " + e.getMessage(), e);
            }
        });
    }

    /**
     * Loads into {@code model} and {@code optimizer} (on every rank) and returns where to continue.
     * A ZeRO optimizer takes only its own parameters' state; the checkpoint may have been saved
     * sharded over any number of ranks, or unsharded.
     */
    public static TrainingPosition load(Path file, Module model, Optimizer optimizer) {
        if (!Files.isRegularFile(file)) {
            throw new IllegalArgumentException("checkpoint " + file + " does not exist");
        }
        try {
            InputArchive archive = new InputArchive();
            archive.load_from(file.toString());
            InputArchive modelArchive = new InputArchive();
            archive.read("model", modelArchive);
            model.load(modelArchive);
            Tensor position = new Tensor();
            archive.read("position", position);
            loadOptimizer(file, archive, optimizer, position.get(2).item_long());
            Tensor rng = new Tensor();
            if (archive.try_read("rng", rng)) {
                torch.getDefaultCPUGenerator().set_state(rng);
            }
            return new TrainingPosition((int) position.get(0).item_long(), (int) position.get(1).item_long(),
                    position.get(2).item_long());
        } catch (RuntimeException e) {
            throw new IllegalStateException("checkpoint " + file + " is unreadable or does not match this model: "
                    + e.getMessage(), e);
        }
    }

    /** The optimizer's state: all of it, or under ZeRO this rank's share, from the file or from its shards. */
    private static void loadOptimizer(Path file, InputArchive archive, Optimizer optimizer, long step) {
        ZeroShards zero = optimizer instanceof DistributedOptimizer d ? d.shards() : null;
        Tensor shards = new Tensor();
        if (!archive.try_read("shards", shards)) {
            InputArchive optimizerArchive = new InputArchive();
            archive.read("optimizer", optimizerArchive);
            if (zero == null) {
                optimizer.load(optimizerArchive);
            } else {
                OptimizerArchives.loadSelected(optimizer, List.of(optimizerArchive), ownedBy(zero, optimizer));
            }
            return;
        }
        int world = (int) shards.get(0).item_long();
        List<InputArchive> sources = new ArrayList<>();
        for (int r = 0; r < world; r++) {
            Path shard = shardFile(file, step, r, world);
            if (!Files.isRegularFile(shard)) {
                throw new IllegalArgumentException("optimizer shard " + r + " of " + world + " for step " + step + " ("
                        + shard + ") is missing; every rank reads every shard, so the checkpoint's directory must be "
                        + "one file system for all ranks");
            }
            InputArchive a = new InputArchive();
            a.load_from(shard.toString());
            sources.add(a);
        }
        OptimizerArchives.loadSelected(optimizer, sources, zero == null ? pos -> true : ownedBy(zero, optimizer));
    }

    /** Whether this rank owns the optimizer's parameter at each position. */
    private static IntPredicate ownedBy(ZeroShards zero, Optimizer optimizer) {
        TensorVector positions = optimizer.parameters();
        boolean[] owned = new boolean[(int) positions.size()];
        for (int i = 0; i < owned.length; i++) {
            owned[i] = zero.owns(positions.get(i));
        }
        return pos -> owned[pos];
    }
}
