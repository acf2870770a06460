package dev.cohort.gloo.c10d;

import dev.cohort.api.collective.DenseBuffer;
import java.nio.Buffer;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Tensor;

/**
 * The native objects of one collective call: CPU tensors that view the caller's memory. A direct
 * buffer is wrapped where it lies (no copy); a heap array is staged through a direct buffer,
 * copied in before the call and out after it. The memory is kept reachable until the call is
 * settled; per-call native objects are freed by {@link #close()}.
 */
public final class NativeTensors implements AutoCloseable {

    private final NativeCache cache;
    private final List<Pointer> natives = new ArrayList<>();
    private final List<Runnable> copyOuts = new ArrayList<>();
    private final List<Buffer> keepAlive = new ArrayList<>();

    public NativeTensors(NativeCache cache) {
        this.cache = cache;
    }

    /** A tensor over {@code buffer}'s elements; {@code in}: its contents are read; {@code out}: written. */
    public Tensor wrap(DenseBuffer buffer, boolean in, boolean out) {
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

    /** A tensor over direct scratch memory of this call. */
    public Tensor tensor(DenseBuffer memory) {
        Buffer view = memory.view();
        keepAlive.add(view);
        Pointer p = new Pointer(view);
        natives.add(p);
        return cache.tensor(p, memory.count(), memory.dataType());
    }

    public <P extends Pointer> P keep(P nativeObject) {
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
}
