package dev.cohort.gloo;

import dev.cohort.core.collective.DataType;
import dev.cohort.core.collective.DenseBuffer;
import java.nio.Buffer;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.DoublePointer;
import org.bytedeco.javacpp.FloatPointer;
import org.bytedeco.javacpp.IntPointer;
import org.bytedeco.javacpp.LongPointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * The native objects of one collective call: CPU tensors that view the caller's memory. A direct
 * buffer is wrapped where it lies (no copy); a heap array is staged through a direct buffer,
 * copied in before the call and out after it. Everything is kept reachable until the call is
 * settled, then freed by {@link #close()}.
 */
final class NativeTensors implements AutoCloseable {

    private final List<Pointer> natives = new ArrayList<>();
    private final List<Runnable> copyOuts = new ArrayList<>();
    private final List<Buffer> keepAlive = new ArrayList<>();

    /** A tensor over {@code buffer}'s elements; {@code in}: its contents are read; {@code out}: written. */
    Tensor wrap(DenseBuffer buffer, boolean in, boolean out) {
        DenseBuffer memory = buffer;
        if (!buffer.isDirect()) {
            memory = DenseBuffer.allocateDirect(buffer.dataType(), buffer.count());
            if (in) {
                memory.copyFrom(buffer);
            }
            if (out) {
                DenseBuffer staged = memory;
                copyOuts.add(() -> buffer.copyFrom(staged));
            }
        }
        return tensor(memory);
    }

    /** A tensor over a fresh direct buffer of {@code count} elements (scratch for padding). */
    Tensor scratch(DenseBuffer memory) {
        return tensor(memory);
    }

    Tensor tensor(DenseBuffer memory) {
        Buffer view = memory.view();
        keepAlive.add(view);
        Pointer p = switch (memory.dataType()) {
            case FLOAT32 -> new FloatPointer((FloatBuffer) view);
            case FLOAT64 -> new DoublePointer((DoubleBuffer) view);
            case INT32 -> new IntPointer((IntBuffer) view);
            case INT64 -> new LongPointer((LongBuffer) view);
        };
        TensorOptions options = new TensorOptions(scalarType(memory.dataType()));
        Tensor t = torch.from_blob(p, new long[] {memory.count()}, options);
        natives.add(p);
        natives.add(options);
        natives.add(t);
        return t;
    }

    <P extends Pointer> P keep(P nativeObject) {
        natives.add(nativeObject);
        return nativeObject;
    }

    /** Copies staged results back into the caller's heap arrays. */
    void copyOut() {
        copyOuts.forEach(Runnable::run);
    }

    @Override
    public void close() {
        for (int i = natives.size() - 1; i >= 0; i--) {
            natives.get(i).close();
        }
        natives.clear();
        keepAlive.clear();
    }

    private static torch.ScalarType scalarType(DataType type) {
        return switch (type) {
            case FLOAT32 -> torch.ScalarType.Float;
            case FLOAT64 -> torch.ScalarType.Double;
            case INT32 -> torch.ScalarType.Int;
            case INT64 -> torch.ScalarType.Long;
        };
    }
}
