package dev.cohort.torch;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.libtorch.ScalarTypes;
import org.bytedeco.javacpp.BytePointer;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;

/** Views between tensors and {@link DenseBuffer}s, sharing memory (no copies). */
final class TensorBuffers {

    private TensorBuffers() {}

    /**
     * A buffer over a contiguous CPU tensor's memory; the tensor must outlive every use of it.
     *
     * @throws IllegalArgumentException for a tensor off the CPU, a non-contiguous one or an unsupported type
     */
    static DenseBuffer view(Tensor t) {
        DataType type = checkMovable(t, "the tensor");
        long bytes = t.numel() * type.byteSize();
        if (bytes > Integer.MAX_VALUE) {
            throw new IllegalArgumentException("tensor of " + bytes + " bytes is larger than 2 GiB");
        }
        if (bytes == 0) {
            return DenseBuffer.allocateDirect(type, 0);
        }
        Pointer data = t.data_ptr();
        return DenseBuffer.of(new BytePointer(data).capacity(bytes).asByteBuffer(), type);
    }

    /**
     * The element type of {@code t}, which Cohort can move: in CPU memory (a device tensor's address
     * is not host memory, and reading it would crash the process), contiguous, of a supported type.
     *
     * @param what names the tensor in the error, e.g. "parameter 3 of the model"
     * @throws IllegalArgumentException saying what is wrong with {@code what} and what to do
     */
    static DataType checkMovable(Tensor t, String what) {
        if (!t.is_cpu()) {
            throw new IllegalArgumentException(
                    what + " is on device '" + t.device().str().getString() + "'; Cohort "
                            + "moves CPU tensors only: keep the model and its tensors on the CPU (or copy with .cpu())");
        }
        if (!t.is_contiguous()) {
            throw new IllegalArgumentException(what + " is not contiguous; call contiguous() first");
        }
        try {
            return ScalarTypes.dataType(t.scalar_type());
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException(what + ": " + e.getMessage(), e);
        }
    }

    /** A 1-d tensor over a direct buffer's memory (the buffer must outlive the tensor). */
    static Tensor tensor(DenseBuffer direct) {
        if (!direct.isDirect()) {
            throw new IllegalArgumentException("only direct buffers can be viewed as tensors");
        }
        Pointer p = new Pointer(direct.view());
        return torch.from_blob(p, new long[] {direct.count()}, new TensorOptions(ScalarTypes.of(direct.dataType())));
    }
}
