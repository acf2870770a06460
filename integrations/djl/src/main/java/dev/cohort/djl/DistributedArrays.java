package dev.cohort.djl;

import ai.djl.ndarray.NDArray;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;

/** Collectives on DJL arrays. */
public final class DistributedArrays {

    private DistributedArrays() {}

    /**
     * The element-wise average of {@code array} over every rank of {@code backend} (the seed's
     * {@code average_all}), as a new array of the same shape, type and manager; {@code array} is
     * not changed. Every rank must call it with an array of the same shape and type, e.g. the
     * training loss a DJL evaluator reports, to log the job's average on the root.
     */
    public static NDArray averageAll(DistributedBackend backend, NDArray array) {
        DataType type = switch (array.getDataType()) {
            case FLOAT32 -> DataType.FLOAT32;
            case FLOAT64 -> DataType.FLOAT64;
            case INT32 -> DataType.INT32;
            case INT64 -> DataType.INT64;
            default ->
                throw new IllegalArgumentException("cannot average a " + array.getDataType()
                        + " array; Cohort averages float32, float64, int32 and int64 (convert with toType)");
        };
        ByteBuffer copy = ByteBuffer.allocateDirect(Math.toIntExact(array.size() * type.byteSize()))
                .order(ByteOrder.nativeOrder());
        copy.put(array.toByteBuffer()).clear();
        // Through the backend: inside a join scope, announced and over the ranks still training.
        DenseBuffer mean = backend.averageAll(DenseBuffer.of(copy, type));
        copy.clear();
        for (int i = 0; i < mean.count(); i++) {
            switch (type) {
                case FLOAT32 -> copy.putFloat((float) mean.getDouble(i));
                case FLOAT64 -> copy.putDouble(mean.getDouble(i));
                case INT32 -> copy.putInt((int) mean.getLong(i));
                default -> copy.putLong(mean.getLong(i));
            }
        }
        copy.clear();
        return array.getManager().create(copy, array.getShape(), array.getDataType());
    }
}
