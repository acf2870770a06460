package dev.cohort.libtorch;

import dev.cohort.api.collective.DataType;
import org.bytedeco.pytorch.global.torch;

/** Cohort's element types as libtorch's scalar types, both ways. */
public final class ScalarTypes {

    private ScalarTypes() {}

    /** The scalar type of {@code type}'s elements. */
    public static torch.ScalarType of(DataType type) {
        return switch (type) {
            case FLOAT32 -> torch.ScalarType.Float;
            case FLOAT64 -> torch.ScalarType.Double;
            case INT32 -> torch.ScalarType.Int;
            case INT64 -> torch.ScalarType.Long;
            case FLOAT16 -> torch.ScalarType.Half;
            case BFLOAT16 -> torch.ScalarType.BFloat16;
        };
    }

    /**
     * The element type of tensors of {@code type}; compared by value, since JavaCPP's enum may hand
     * back a different constant of the same value.
     *
     * @throws IllegalArgumentException for a scalar type Cohort's collectives do not move
     */
    public static DataType dataType(torch.ScalarType type) {
        for (DataType d : DataType.values()) {
            if (of(d).value == type.value) {
                return d;
            }
        }
        throw new IllegalArgumentException(
                "tensors of type " + type
                        + " are not supported by Cohort's collectives (float32, float64, int32, int64, float16 and bfloat16 are)");
    }
}
