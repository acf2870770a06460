package dev.cohort.gloo.c10d;

import dev.cohort.api.collective.DataType;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.libtorch.ScalarTypes;
import java.util.LinkedHashMap;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Supplier;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/**
 * Native objects a group reuses from call to call, so the hot path allocates little: per-call
 * options (c10d copies them at the call) and tensor headers over direct memory.
 *
 * <p>A cached tensor is a view (address, length, type) that owns nothing; it is reused only for a
 * buffer at that same address, length and type, which is then valid memory again. The cache is
 * bounded: the least recently used header is released when it is full. Everything cached is retained against the caller's
 * {@code PointerScope} and released at {@link #close()}.
 */
public final class NativeCache implements AutoCloseable {

    private static final int MAX_TENSORS = 256;

    private record TensorKey(long address, long count, DataType type) {}

    private final Map<Object, Pointer> options = new ConcurrentHashMap<>();
    /** Least recently used first; evicting the eldest never touches a header the current call just took. */
    private final Map<TensorKey, Tensor> tensors = new LinkedHashMap<>(64, 0.75f, true) {
        @Override
        protected boolean removeEldestEntry(Map.Entry<TensorKey, Tensor> eldest) {
            if (size() > MAX_TENSORS) {
                LibTorch.release(eldest.getValue());
                return true;
            }
            return false;
        }
    };

    private final Map<DataType, TensorOptions> tensorOptions = new ConcurrentHashMap<>();

    /** The options object for {@code key}, made once by {@code make}. */
    @SuppressWarnings("unchecked")
    public <P extends Pointer> P options(Object key, Supplier<P> make) {
        return (P) options.computeIfAbsent(key, k -> LibTorch.retain(make.get()));
    }

    /** A tensor header over {@code count} elements of {@code type} at {@code data}. */
    synchronized Tensor tensor(Pointer data, long count, DataType type) {
        TensorKey key = new TensorKey(data.address() + data.position() * sizeOf(data), count, type);
        Tensor cached = tensors.get(key);
        if (cached != null) {
            return cached;
        }
        TensorOptions o =
                tensorOptions.computeIfAbsent(type, t -> LibTorch.retain(new TensorOptions(ScalarTypes.of(t))));
        Tensor t = LibTorch.retain(torch.from_blob(data, new long[] {count}, o));
        tensors.put(key, t);
        return t;
    }

    private static long sizeOf(Pointer p) {
        return p.position() == 0 ? 0 : p.sizeof();
    }

    /** Drops the tensor headers; an in-flight call still holds its own reference in c10d. */
    private synchronized void dropTensors() {
        tensors.values().forEach(LibTorch::release);
        tensors.clear();
    }

    @Override
    public void close() {
        options.values().forEach(LibTorch::release);
        options.clear();
        tensorOptions.values().forEach(LibTorch::release);
        tensorOptions.clear();
        dropTensors();
    }
}
