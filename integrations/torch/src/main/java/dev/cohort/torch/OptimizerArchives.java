package dev.cohort.torch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
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

    private OptimizerArchives() {}

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
     * Where the tensor at one optimizer position sits in its group's flat space ({@link FlatLayout}):
     * elements {@code [start, start + count)}; the tensor has the elements of {@code shape}, more
     * than {@code count} for a ZeRO shard's padding.
     */
    record Span(int group, int position, long start, long count, long[] shape) {
        long length() {
            long n = 1;
            for (long d : shape) {
                n *= d;
            }
            return n;
        }
    }

    /** An archive an optimizer saved, and where the tensor at each of its positions sits. */
    record Source(InputArchive archive, List<Span> spans) {}

    /**
     * Loads into {@code optimizer} the state that {@code sources} hold for the flat ranges of
     * {@code targets} (each of the optimizer's positions that should have state): each per-element
     * field (a momentum buffer, a moment) is cut from the pieces of the sources' tensors that
     * cover the target's range and laid end to end (zeros for padding, or where no source had
     * state yet); any other field (Adam's step) is the first piece's. The groups' options (learning
     * rate, betas…) come from the first source. Sharded any way, optimizers of the same kind over
     * the same parameters thus exchange state: ZeRO shards of N ranks into shards of M, or into
     * whole parameters, and back.
     *
     * @throws IllegalArgumentException if a source has another number of parameter groups
     */
    static void reshard(Optimizer optimizer, List<Source> sources, List<Span> targets) {
        try (PointerScope temporaries = new PointerScope()) {
            InputArchive fresh = roundTrip(optimizer);
            List<List<String>> targetKeys = groupKeys(fresh);
            List<List<List<String>>> sourceKeys = new ArrayList<>();
            List<InputArchive> sourceStates = new ArrayList<>();
            for (Source source : sources) {
                List<List<String>> keys = groupKeys(source.archive());
                if (keys.size() != targetKeys.size()) {
                    throw new IllegalArgumentException("the saved optimizer has " + keys.size()
                            + " parameter group(s), " + "this one " + targetKeys.size());
                }
                sourceKeys.add(keys);
                InputArchive state = new InputArchive();
                sourceStates.add(source.archive().try_read("state", state) ? state : null);
            }
            OutputArchive out = new OutputArchive();
            IValue version = new IValue();
            fresh.read("pytorch_version", version);
            out.write("pytorch_version", version);
            OutputArchive state = new OutputArchive(out.compilation_unit());
            for (Span target : targets) {
                List<Piece> pieces = new ArrayList<>();
                for (int k = 0; k < sources.size(); k++) {
                    for (Span span : sources.get(k).spans()) {
                        long from = Math.max(target.start(), span.start());
                        long to = Math.min(target.start() + target.count(), span.start() + span.count());
                        InputArchive fields = new InputArchive();
                        if (span.group() == target.group()
                                && from < to
                                && sourceStates.get(k) != null
                                && sourceStates
                                        .get(k)
                                        .try_read(
                                                sourceKeys
                                                        .get(k)
                                                        .get(span.group())
                                                        .get(span.position()),
                                                fields)) {
                            pieces.add(new Piece(fields, span, from, to));
                        }
                    }
                }
                if (!pieces.isEmpty()) {
                    OutputArchive fields = new OutputArchive(out.compilation_unit());
                    joinFields(pieces, target, fields);
                    state.write(targetKeys.get(target.group()).get(target.position()), fields);
                }
            }
            out.write("state", state);
            out.write("param_groups", groups(fresh, sources.get(0).archive(), out));
            optimizer.load(roundTrip(out));
        }
    }

    /** A source's state for one position, and the part of the flat space {@code [from, to)} it gives the target. */
    private record Piece(InputArchive fields, Span span, long from, long to) {}

    private static void joinFields(List<Piece> pieces, Span target, OutputArchive out) {
        Piece first = pieces.get(0);
        for (String field : keys(first.fields())) {
            IValue value = new IValue();
            first.fields().read(field, value);
            if (value.isTensor() && value.toTensor().numel() == first.span().length()) {
                Tensor joined = value.toTensor().new_zeros(target.length());
                for (Piece piece : pieces) {
                    IValue part = new IValue();
                    if (piece.fields().try_read(field, part)) {
                        joined.narrow(0, piece.from() - target.start(), piece.to() - piece.from())
                                .copy_(part.toTensor()
                                        .reshape(-1)
                                        .narrow(0, piece.from() - piece.span().start(), piece.to() - piece.from()));
                    }
                }
                out.write(field, joined.view(target.shape()), true);
            } else if (value.isTensor()) {
                out.write(field, value.toTensor(), true);
            } else {
                out.write(field, value);
            }
        }
    }

    /** The param_groups of {@code fresh} (this optimizer's positions and keys), each group's options from {@code saved}. */
    private static OutputArchive groups(InputArchive fresh, InputArchive saved, OutputArchive owner) {
        InputArchive freshGroups = new InputArchive();
        fresh.read("param_groups", freshGroups);
        InputArchive savedGroups = new InputArchive();
        saved.read("param_groups", savedGroups);
        OutputArchive out = new OutputArchive(owner.compilation_unit());
        for (String key : keys(freshGroups)) {
            InputArchive freshGroup = new InputArchive();
            if (!freshGroups.try_read(key, freshGroup)) {
                IValue value = new IValue();
                freshGroups.read(key, value);
                out.write(key, value.toTensor(), true); // param_groups/size
                continue;
            }
            InputArchive savedGroup = new InputArchive();
            savedGroups.read(key, savedGroup);
            OutputArchive group = new OutputArchive(owner.compilation_unit());
            for (String entry : keys(freshGroup)) {
                copyEntry(entry.equals("options") ? savedGroup : freshGroup, entry, group);
            }
            out.write(key, group);
        }
        return out;
    }

    /** Each group's parameter keys, by position. */
    private static List<List<String>> groupKeys(InputArchive archive) {
        InputArchive groups = new InputArchive();
        archive.read("param_groups", groups);
        Tensor size = new Tensor();
        groups.read("param_groups/size", size);
        List<List<String>> all = new ArrayList<>();
        for (long g = 0; g < size.item_long(); g++) {
            InputArchive group = new InputArchive();
            groups.read("param_groups/" + g, group);
            Tensor count = new Tensor();
            group.read("params/size", count);
            List<String> keys = new ArrayList<>();
            for (long j = 0; j < count.item_long(); j++) {
                IValue key = new IValue();
                group.read("params/" + j, key);
                keys.add(key.toStringRef().getString());
            }
            all.add(keys);
        }
        return all;
    }

    /** Every entry of {@code in}, nested archives included, into {@code out}. */
    private static void copy(InputArchive in, OutputArchive out) {
        for (String key : keys(in)) {
            copyEntry(in, key, out);
        }
    }

    /** Entry {@code key} of {@code in} into {@code out}: a nested archive whole, a tensor as a buffer (as libtorch writes state). */
    private static void copyEntry(InputArchive in, String key, OutputArchive out) {
        InputArchive sub = new InputArchive();
        if (in.try_read(key, sub)) {
            OutputArchive subOut = new OutputArchive(out.compilation_unit());
            copy(sub, subOut);
            out.write(key, subOut);
            return;
        }
        IValue value = new IValue();
        in.read(key, value);
        if (value.isTensor()) {
            out.write(key, value.toTensor(), true);
        } else {
            out.write(key, value);
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
