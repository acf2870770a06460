package dev.cohort.torch;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.CheckpointFile;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.steps.CheckpointEvent;
import dev.cohort.data.DataPosition;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OptimizerParamGroupVector;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * Training checkpoints: model parameters and buffers, optimizer state (momentum and the like),
 * the {@link TrainingPosition} and the state of libtorch's default CPU random generator (dropout,
 * random initialization; the root's state, restored on every rank), in one libtorch archive,
 * written atomically and durably ({@link CheckpointFile}).
 * Data order and any randomness are functions of (seed, epoch), so the position is all a resumed
 * run needs to continue exactly as the uninterrupted run would. A {@link ParquetLoader}'s
 * {@link DataPosition} goes in too where given ({@link #loadWithData} reads it back), so a resumed
 * run streams exactly the batches the saved one had left, at its world size or another.
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

    private Checkpoints() {}

    /**
     * Saves atomically and durably ({@link CheckpointFile}); call on the root worker only.
     *
     * @throws IllegalArgumentException for an optimizer whose state is sharded (ZeRO): use
     *                                  {@link #saveSharded} on every rank
     */
    public static void save(Path file, Module model, Optimizer optimizer, TrainingPosition position) {
        save(file, model, optimizer, position, null);
    }

    /**
     * {@link #save(Path, Module, Optimizer, TrainingPosition)} with where the data stands: the
     * {@link ParquetLoader.Epoch#position()} after the last batch trained on (null for none).
     */
    public static void save(
            Path file, Module model, Optimizer optimizer, TrainingPosition position, DataPosition data) {
        ZeroShards zero = optimizer instanceof DistributedOptimizer d ? d.shards() : null;
        if (zero != null) {
            throw new IllegalArgumentException(
                    "the optimizer's state is sharded across " + zero.group().size() + " rank(s) (ZeRO stage "
                            + zero.stage() + "): call Checkpoints.saveSharded on every rank");
        }
        writeMain(file, model, optimizer, lossScale(optimizer), position, data, null, false);
    }

    /**
     * As {@link #save(Path, Module, Optimizer, TrainingPosition, DataPosition)}, made durable in the
     * background ({@link CheckpointFile#writeAsync}): the state is written to a staging file in
     * memory before this returns, so training may change it at once; the next save, or {@link
     * CheckpointFile#awaitWrites()} (before the program ends), waits for the file and throws a
     * failure to write it.
     */
    public static void saveAsync(
            Path file, Module model, Optimizer optimizer, TrainingPosition position, DataPosition data) {
        ZeroShards zero = optimizer instanceof DistributedOptimizer d ? d.shards() : null;
        if (zero != null) {
            throw new IllegalArgumentException("saveAsync saves an unsharded optimizer; under ZeRO use saveSharded");
        }
        writeMain(file, model, optimizer, lossScale(optimizer), position, data, null, true);
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
        saveSharded(file, model, optimizer, position, null);
    }

    /** {@link #saveSharded(Path, Module, Optimizer, TrainingPosition)} with where the data stands (null for none). */
    public static void saveSharded(
            Path file, Module model, Optimizer optimizer, TrainingPosition position, DataPosition data) {
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
            long[] layout = new long[zero.layouts().size() + 1];
            layout[0] = group.size();
            for (int g = 0; g < zero.layouts().size(); g++) {
                layout[g + 1] = zero.layouts().get(g).total();
            }
            writeMain(file, model, null, lossScale(optimizer), position, data, layout, false);
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
            throw new UncheckedIOException(
                    "removing old optimizer shards beside " + file + " failed: " + e.getMessage(), e);
        }
    }

    /** fp16's loss scale, which a checkpoint keeps; null at the other precisions. */
    private static LossScaler scaler(Optimizer optimizer) {
        return optimizer instanceof DistributedOptimizer d ? d.scaler() : null;
    }

    /** The loss scale's state now (a background save must not read it later), or null. */
    private static long[] lossScale(Optimizer optimizer) {
        return scaler(optimizer) == null ? null : scaler(optimizer).state();
    }

    /**
     * The checkpoint file: the optimizer's state in it, or (null optimizer) in shard files beside it,
     * {@code shards} giving their number and each parameter group's elements.
     */
    private static void writeMain(
            Path file,
            Module model,
            Optimizer optimizer,
            long[] lossScale,
            TrainingPosition position,
            DataPosition data,
            long[] shards,
            boolean inBackground) {
        CheckpointFile.Writer writer = tmp -> {
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
                    archive.write("shards", torch.tensor(shards));
                }
                archive.write(
                        "position",
                        torch.tensor(new long[] {position.epoch(), position.batchInEpoch(), position.step()}));
                archive.write("rng", torch.getDefaultCPUGenerator().get_state());
                if (lossScale != null) {
                    archive.write("lossScale", torch.tensor(lossScale));
                }
                if (data != null) {
                    archive.write("data", torch.tensor(widened(data.toBytes())));
                }
                archive.save_to(tmp.toString());
            } catch (RuntimeException e) {
                throw new IllegalStateException("saving checkpoint " + file + " failed: " + e.getMessage(), e);
            }
        };
        if (inBackground) {
            CheckpointFile.writeAsync(file, writer);
        } else {
            CheckpointFile.write(file, writer);
        }
    }

    /**
     * Loads into {@code model} and {@code optimizer} (on every rank) and returns where to continue.
     * A ZeRO optimizer takes only its own parameters' state; the checkpoint may have been saved
     * sharded over any number of ranks, or unsharded.
     */
    public static TrainingPosition load(Path file, Module model, Optimizer optimizer) {
        return loadWithData(file, model, optimizer).position();
    }

    /**
     * A loaded checkpoint's positions.
     *
     * @param position where training goes on
     * @param data     where the data goes on ({@link ParquetLoader#epoch(DataPosition)}), or null when the
     *                 checkpoint holds none
     */
    public record Loaded(TrainingPosition position, DataPosition data) {}

    /** {@link #load}, returning the data position too. */
    public static Loaded loadWithData(Path file, Module model, Optimizer optimizer) {
        return CheckpointEvent.load(file, () -> read(file, model, optimizer));
    }

    private static Loaded read(Path file, Module model, Optimizer optimizer) {
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
            Tensor lossScale = new Tensor();
            if (scaler(optimizer) != null && archive.try_read("lossScale", lossScale)) {
                scaler(optimizer).restore(new long[] {
                    lossScale.get(0).item_long(),
                    lossScale.get(1).item_long(),
                    lossScale.get(2).item_long()
                });
            }
            Tensor data = new Tensor();
            return new Loaded(
                    new TrainingPosition(
                            (int) position.get(0).item_long(),
                            (int) position.get(1).item_long(),
                            position.get(2).item_long()),
                    archive.try_read("data", data) ? DataPosition.fromBytes(narrowed(data)) : null);
        } catch (RuntimeException e) {
            throw new IllegalStateException(
                    "checkpoint " + file + " is unreadable or does not match this model: " + e.getMessage(), e);
        }
    }

    /** Bytes as int64 elements, one each: the data position is a few dozen bytes of text. */
    private static long[] widened(byte[] bytes) {
        long[] out = new long[bytes.length];
        for (int i = 0; i < bytes.length; i++) {
            out[i] = bytes[i];
        }
        return out;
    }

    private static byte[] narrowed(Tensor widened) {
        long[] values = new long[(int) widened.numel()];
        widened.contiguous().data_ptr_long().get(values);
        byte[] out = new byte[values.length];
        for (int i = 0; i < values.length; i++) {
            out[i] = (byte) values[i];
        }
        return out;
    }

    /** The optimizer's state: all of it, or under ZeRO this rank's shards, from the file or from its shards. */
    private static void loadOptimizer(Path file, InputArchive archive, Optimizer optimizer, long step) {
        ZeroShards zero = optimizer instanceof DistributedOptimizer d ? d.shards() : null;
        Tensor shards = new Tensor();
        boolean sharded = archive.try_read("shards", shards);
        if (!sharded && zero == null) {
            InputArchive optimizerArchive = new InputArchive();
            archive.read("optimizer", optimizerArchive);
            optimizer.load(optimizerArchive);
            return;
        }
        List<FlatLayout> layouts = zero != null ? zero.layouts() : layouts(optimizer);
        List<OptimizerArchives.Source> sources = new ArrayList<>();
        if (sharded) {
            int world = (int) shards.get(0).item_long();
            for (int g = 0; g < layouts.size(); g++) {
                long saved = g + 1 < shards.numel() ? shards.get(g + 1).item_long() : -1;
                if (saved != layouts.get(g).total()) {
                    throw new IllegalArgumentException("parameter group " + g + " of the checkpoint's optimizer had "
                            + saved + " elements, this one's has "
                            + layouts.get(g).total() + ": not the same model");
                }
            }
            for (int r = 0; r < world; r++) {
                Path shard = shardFile(file, step, r, world);
                if (!Files.isRegularFile(shard)) {
                    throw new IllegalArgumentException(
                            "optimizer shard " + r + " of " + world + " for step " + step + " ("
                                    + shard
                                    + ") is missing; every rank reads every shard, so the checkpoint's directory must be "
                                    + "one file system for all ranks");
                }
                InputArchive a = new InputArchive();
                a.load_from(shard.toString());
                List<OptimizerArchives.Span> spans = new ArrayList<>();
                for (int g = 0; g < layouts.size(); g++) {
                    spans.add(layouts.get(g).shardSpan(g, r, world));
                }
                sources.add(new OptimizerArchives.Source(a, spans));
            }
        } else {
            InputArchive optimizerArchive = new InputArchive();
            archive.read("optimizer", optimizerArchive);
            sources.add(new OptimizerArchives.Source(optimizerArchive, wholeSpans(layouts)));
        }
        List<OptimizerArchives.Span> targets = new ArrayList<>();
        if (zero != null) {
            for (int g = 0; g < layouts.size(); g++) {
                targets.add(layouts.get(g)
                        .shardSpan(g, zero.group().rank(), zero.group().size()));
            }
        } else {
            targets = wholeSpans(layouts);
        }
        OptimizerArchives.reshard(optimizer, sources, targets);
    }

    private static List<FlatLayout> layouts(Optimizer optimizer) {
        List<FlatLayout> layouts = new ArrayList<>();
        OptimizerParamGroupVector groups = optimizer.param_groups();
        for (long g = 0; g < groups.size(); g++) {
            layouts.add(FlatLayout.of(groups.get(g).params()));
        }
        return layouts;
    }

    private static List<OptimizerArchives.Span> wholeSpans(List<FlatLayout> layouts) {
        List<OptimizerArchives.Span> spans = new ArrayList<>();
        for (int g = 0; g < layouts.size(); g++) {
            spans.addAll(layouts.get(g).spans(g));
        }
        return spans;
    }
}
