package dev.cohort.torch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.IntPredicate;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.IValue;
import org.bytedeco.pytorch.InputArchive;
import org.bytedeco.pytorch.Optimizer;
import org.bytedeco.pytorch.OutputArchive;
import org.bytedeco.pytorch.StringVector;
import org.bytedeco.pytorch.Tensor;

/**
 * Optimizer state through libtorch's own serialization, which keeps it per parameter: an archive
 * holds {@code state/<key>/<field>} (a momentum buffer, Adam's moments and step) for each
 * parameter that has state, and {@code param_groups/<g>/params/<j>} naming each parameter's key
 * by its position in its group, with the group's options. Loading matches parameters by
 * position, so an archive written on one rank loads into the same optimizer on another, and the
 * state of chosen positions can be taken from several archives: a ZeRO checkpoint's shards,
 * re-sharded onto another world size.
 */
final class OptimizerArchives {

    private OptimizerArchives() {
    }

    /** The bytes of the tensors in {@code optimizer}'s state, as it serializes it. */
    static long stateBytes(Optimizer optimizer) {
        try (PointerScope temporaries = new PointerScope()) {
            InputArchive archive = roundTrip(optimizer);
            InputArchive state = new InputArchive();
            if (!archive.try_read("state", state)) {
                return 0;
            }
            return tensorBytes(state);
        }
    }

    private static long tensorBytes(InputArchive archive) {
        long bytes = 0;
        for (String key : keys(archive)) {
            InputArchive sub = new InputArchive();
            if (archive.try_read(key, sub)) {
                bytes += tensorBytes(sub);
            } else {
                IValue value = new IValue();
                archive.read(key, value);
                if (value.isTensor()) {
                    Tensor t = value.toTensor();
                    bytes += t.numel() * t.element_size();
                }
            }
        }
        return bytes;
    }

    /**
     * Loads into {@code optimizer} the state of each parameter position that {@code wanted}
     * accepts, from whichever of {@code sources} holds it (archives that optimizers of the same
     * kind over the same parameter groups saved); the groups' options come from the first source.
     * Positions count through the groups in order, as {@code optimizer.parameters()} lists them.
     *
     * @throws IllegalArgumentException if the sources' parameter groups differ from each other
     */
    static void loadSelected(Optimizer optimizer, List<InputArchive> sources, IntPredicate wanted) {
        try (PointerScope temporaries = new PointerScope()) {
            List<String> firstKeys = positionKeys(sources.get(0));
            OutputArchive out = new OutputArchive();
            IValue version = new IValue();
            sources.get(0).read("pytorch_version", version);
            out.write("pytorch_version", version);
            OutputArchive state = new OutputArchive(out.compilation_unit());
            boolean[] taken = new boolean[firstKeys.size()];
            for (int k = 0; k < sources.size(); k++) {
                List<String> keys = positionKeys(sources.get(k));
                if (keys.size() != firstKeys.size()) {
                    throw new IllegalArgumentException("optimizer state " + k + " has " + keys.size()
                            + " parameters, the first has " + firstKeys.size() + ": they are not of one optimizer");
                }
                Map<String, Integer> positionOf = new HashMap<>();
                for (int pos = 0; pos < keys.size(); pos++) {
                    positionOf.put(keys.get(pos), pos);
                }
                InputArchive sourceState = new InputArchive();
                if (!sources.get(k).try_read("state", sourceState)) {
                    continue;
                }
                for (String key : keys(sourceState)) {
                    Integer pos = positionOf.get(key);
                    if (pos == null || taken[pos] || !wanted.test(pos)) {
                        continue;
                    }
                    InputArchive fields = new InputArchive();
                    sourceState.read(key, fields);
                    OutputArchive copied = new OutputArchive(out.compilation_unit());
                    copy(fields, copied);
                    state.write(firstKeys.get(pos), copied);   // under the key the first source's groups give it
                    taken[pos] = true;
                }
            }
            out.write("state", state);
            InputArchive groups = new InputArchive();
            sources.get(0).read("param_groups", groups);
            OutputArchive groupsCopy = new OutputArchive(out.compilation_unit());
            copy(groups, groupsCopy);
            out.write("param_groups", groupsCopy);
            optimizer.load(roundTrip(out));
        }
    }

    /** Each parameter's key, by position through the groups in order. */
    private static List<String> positionKeys(InputArchive archive) {
        InputArchive groups = new InputArchive();
        archive.read("param_groups", groups);
        Tensor size = new Tensor();
        groups.read("param_groups/size", size);
        List<String> keys = new ArrayList<>();
        for (long g = 0; g < size.item_long(); g++) {
            InputArchive group = new InputArchive();
            groups.read("param_groups/" + g, group);
            Tensor count = new Tensor();
            group.read("params/size", count);
            for (long j = 0; j < count.item_long(); j++) {
                IValue key = new IValue();
                group.read("params/" + j, key);
                keys.add(key.toStringRef().getString());
            }
        }
        return keys;
    }

    /** Every entry of {@code in}, nested archives included, into {@code out} (tensors as buffers, as libtorch writes state). */
    private static void copy(InputArchive in, OutputArchive out) {
        for (String key : keys(in)) {
            InputArchive sub = new InputArchive();
            if (in.try_read(key, sub)) {
                OutputArchive subOut = new OutputArchive(out.compilation_unit());
                copy(sub, subOut);
                out.write(key, subOut);
            } else {
                IValue value = new IValue();
                in.read(key, value);
                if (value.isTensor()) {
                    out.write(key, value.toTensor(), true);
                } else {
                    out.write(key, value);
                }
            }
        }
    }

    private static List<String> keys(InputArchive archive) {
        StringVector keys = archive.keys();
        List<String> out = new ArrayList<>();
        for (long i = 0; i < keys.size(); i++) {
            out.add(keys.get(i).getString());
        }
        return out;
    }

    private static InputArchive roundTrip(Optimizer optimizer) {
        OutputArchive archive = new OutputArchive();
        optimizer.save(archive);
        return roundTrip(archive);
    }

    /** {@code archive} written to a temporary file and read back (libtorch reads only what was saved). */
    static InputArchive roundTrip(OutputArchive archive) {
        try {
            Path file = Files.createTempFile("cohort-optimizer-", ".pt");
            try {
                archive.save_to(file.toString());
                InputArchive in = new InputArchive();
                in.load_from(file.toString());
                return in;
            } finally {
                Files.deleteIfExists(file);
            }
        } catch (IOException e) {
            throw new UncheckedIOException("writing a temporary optimizer archive failed: " + e.getMessage(), e);
        }
    }
}
