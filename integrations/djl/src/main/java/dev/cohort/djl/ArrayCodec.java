package dev.cohort.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.DataType;
import ai.djl.ndarray.types.Shape;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** An array in a checkpoint: its element type, shape and bytes (in the host's byte order, recorded). */
final class ArrayCodec {

    private ArrayCodec() {}

    static void write(DataOutputStream out, NDArray array) throws IOException {
        out.writeUTF(array.getDataType().name());
        long[] dims = array.getShape().getShape();
        out.writeInt(dims.length);
        for (long d : dims) {
            out.writeLong(d);
        }
        ByteBuffer bytes = array.toByteBuffer();
        byte[] copy = new byte[bytes.remaining()];
        bytes.get(copy);
        out.writeInt(copy.length);
        out.write(copy);
    }

    /** A new array of {@code manager} holding the next array of {@code in}. */
    static NDArray read(DataInputStream in, NDManager manager, String what, String source) throws IOException {
        Header h = header(in, what, source);
        ByteBuffer bytes = ByteBuffer.allocateDirect(h.length).order(ByteOrder.nativeOrder());
        bytes.put(h.content(in)).flip();
        return manager.create(bytes, h.shape, h.type);
    }

    /** The next array of {@code in} into {@code target}, in place; its type and shape must be {@code target}'s. */
    static void readInto(DataInputStream in, NDArray target, String what, String source) throws IOException {
        Header h = header(in, what, source);
        if (h.type != target.getDataType() || !h.shape.equals(target.getShape())) {
            throw new IllegalArgumentException(source + " holds " + what + " as " + h.type + " " + h.shape
                    + ", this model's is " + target.getDataType() + " " + target.getShape()
                    + ": the checkpoint is of another model");
        }
        ByteBuffer memory = target.toByteBuffer(true);
        if (memory.remaining() != h.length) {
            throw new IllegalStateException(
                    what + " takes " + memory.remaining() + " bytes, " + source + " holds " + h.length);
        }
        memory.put(h.content(in));
    }

    private record Header(DataType type, Shape shape, int length) {
        byte[] content(DataInputStream in) throws IOException {
            byte[] content = new byte[length];
            in.readFully(content);
            return content;
        }
    }

    private static Header header(DataInputStream in, String what, String source) throws IOException {
        DataType type;
        String name = in.readUTF();
        try {
            type = DataType.valueOf(name);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(source + " holds " + what + " of unknown type " + name, e);
        }
        int rank = in.readInt();
        if (rank < 0 || rank > 32) {
            throw new IllegalArgumentException(source + " is corrupt: " + what + " has " + rank + " dimensions");
        }
        long[] dims = new long[rank];
        for (int i = 0; i < rank; i++) {
            dims[i] = in.readLong();
        }
        int length = in.readInt();
        Shape shape = new Shape(dims);
        if (length < 0 || length != shape.size() * type.getNumOfBytes()) {
            throw new IllegalArgumentException(
                    source + " is corrupt: " + what + " (" + type + " " + shape + ") has " + length + " bytes");
        }
        return new Header(type, shape, length);
    }
}
