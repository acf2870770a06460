package dev.cohort.api.collective;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.Objects;

/**
 * Collectives of values rather than tensors (torch.distributed's {@code broadcast_object_list},
 * {@code all_gather_object}, {@code gather_object}): byte arrays, or {@code Serializable} objects
 * through Java serialization, for metadata such as per-rank file lists, metrics or configuration.
 * They run on any {@link ProcessGroup}, as two collectives of the group: the lengths first, then
 * the bytes (as int64 words), so every rank must make the same calls in the same order, as with
 * any collective; each waits up to the group's timeout.
 *
 * <p>{@code gather} delivers every rank's value to the root only, but moves them with an
 * allgather (every rank receives all the bytes): meant for small values.
 *
 * <p>Deserializing runs code of the classes named in the bytes: use the object forms only between
 * ranks of one job you trust, or send bytes of your own format (JSON, protobuf) with the byte forms.
 */
public final class ObjectCollectives {

    private ObjectCollectives() {}

    /** Rank {@code root}'s bytes on every rank ({@code value} is read on the root only; may be null elsewhere). */
    public static byte[] broadcastBytes(ProcessGroup group, byte[] value, int root) {
        boolean isRoot = group.rank() == root;
        long[] length = {isRoot ? Objects.requireNonNull(value, "value").length : 0};
        group.broadcast(DenseBuffer.of(length), root).await();
        ByteBuffer words = words(Math.toIntExact(length[0]));
        if (isRoot) {
            words.put(value).clear();
        }
        group.broadcast(DenseBuffer.of(words, DataType.INT64), root).await();
        byte[] out = new byte[Math.toIntExact(length[0])];
        words.get(0, out);
        return out;
    }

    /** Every rank's bytes, in rank order, on every rank. */
    public static List<byte[]> allgatherBytes(ProcessGroup group, byte[] value) {
        Objects.requireNonNull(value, "value");
        int n = group.size();
        long[] lengths = new long[n];
        group.allgather(DenseBuffer.of(new long[] {value.length}), DenseBuffer.of(lengths))
                .await();
        int[] counts = new int[n];
        int total = 0;
        for (int r = 0; r < n; r++) {
            counts[r] = wordsFor(Math.toIntExact(lengths[r]));
            total = Math.addExact(total, counts[r]);
        }
        ByteBuffer mine = words(value.length);
        mine.put(value).clear();
        ByteBuffer all = ByteBuffer.allocateDirect(Math.multiplyExact(total, 8)).order(ByteOrder.nativeOrder());
        group.allgatherv(DenseBuffer.of(mine, DataType.INT64), DenseBuffer.of(all, DataType.INT64), counts)
                .await();
        List<byte[]> out = new ArrayList<>(n);
        int at = 0;
        for (int r = 0; r < n; r++) {
            byte[] b = new byte[Math.toIntExact(lengths[r])];
            all.get(at * 8, b);
            out.add(b);
            at += counts[r];
        }
        return Collections.unmodifiableList(out);
    }

    /** Every rank's bytes, in rank order, on rank {@code root}; an empty list on the others. */
    public static List<byte[]> gatherBytes(ProcessGroup group, byte[] value, int root) {
        checkRoot(group, root);
        List<byte[]> all = allgatherBytes(group, value);
        return group.rank() == root ? all : List.of();
    }

    /** Rank {@code root}'s object on every rank: the root gets its own back, the others a copy ({@code value} may be null there). */
    public static <T extends Serializable> T broadcast(ProcessGroup group, T value, int root) {
        checkRoot(group, root);
        byte[] bytes = broadcastBytes(group, group.rank() == root ? serialize(value) : null, root);
        return group.rank() == root ? value : deserialize(bytes);
    }

    /** Every rank's object, in rank order, on every rank. */
    public static <T extends Serializable> List<T> allgather(ProcessGroup group, T value) {
        List<byte[]> all = allgatherBytes(group, serialize(value));
        List<T> out = new ArrayList<>(all.size());
        for (byte[] b : all) {
            out.add(deserialize(b));
        }
        return Collections.unmodifiableList(out);
    }

    /** Every rank's object, in rank order, on rank {@code root}; an empty list on the others. */
    public static <T extends Serializable> List<T> gather(ProcessGroup group, T value, int root) {
        checkRoot(group, root);
        List<byte[]> all = allgatherBytes(group, serialize(value));
        if (group.rank() != root) {
            return List.of();
        }
        List<T> out = new ArrayList<>(all.size());
        for (byte[] b : all) {
            out.add(deserialize(b));
        }
        return Collections.unmodifiableList(out);
    }

    private static void checkRoot(ProcessGroup group, int root) {
        if (root < 0 || root >= group.size()) {
            throw new IllegalArgumentException("root " + root + " is not a rank of a group of " + group.size());
        }
    }

    private static int wordsFor(int bytes) {
        return (bytes + 7) / 8;
    }

    /** A zeroed direct buffer of whole int64 words holding {@code bytes}. */
    private static ByteBuffer words(int bytes) {
        return ByteBuffer.allocateDirect(wordsFor(bytes) * 8).order(ByteOrder.nativeOrder());
    }

    private static byte[] serialize(Serializable value) {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(value);
        } catch (IOException e) {
            throw new UncheckedIOException(
                    "cannot serialize "
                            + (value == null ? "null" : value.getClass().getName()) + ": " + e.getMessage(),
                    e);
        }
        return bytes.toByteArray();
    }

    @SuppressWarnings("unchecked")
    private static <T> T deserialize(byte[] bytes) {
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes))) {
            return (T) in.readObject();
        } catch (IOException | ClassNotFoundException e) {
            throw new IllegalStateException(
                    "cannot deserialize a value another rank sent (" + bytes.length + " bytes): " + e, e);
        }
    }
}
