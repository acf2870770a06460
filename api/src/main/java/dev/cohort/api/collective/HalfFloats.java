package dev.cohort.api.collective;

import java.lang.invoke.MethodHandle;
import java.lang.invoke.MethodHandles;
import java.lang.invoke.MethodType;

/**
 * Conversions between float32 and the two 16-bit floating-point formats, rounding to nearest,
 * ties to even (as hardware and PyTorch do): IEEE binary16 ({@link DataType#FLOAT16}: 5 exponent
 * bits, 10 mantissa bits, largest finite 65504) and bfloat16 ({@link DataType#BFLOAT16}: float32's
 * upper half, 8 exponent bits, 7 mantissa bits). NaN stays NaN; values beyond the largest finite
 * one become infinities.
 */
public final class HalfFloats {

    /**
     * The binary16 conversions: the JDK's own (JDK 20+, intrinsics where the CPU has them), else the ones written
     * here. A constant handle, which the JIT inlines like a direct call.
     */
    private static final MethodHandle TO_FLOAT =
            jdkOrHere("float16ToFloat", "fp16ToFloatHere", MethodType.methodType(float.class, short.class));

    private static final MethodHandle TO_FP16 =
            jdkOrHere("floatToFloat16", "floatToFp16Here", MethodType.methodType(short.class, float.class));

    private HalfFloats() {}

    private static MethodHandle jdkOrHere(String jdk, String here, MethodType type) {
        try {
            return MethodHandles.publicLookup().findStatic(Float.class, jdk, type);
        } catch (ReflectiveOperationException olderJdk) {
            try {
                return MethodHandles.lookup().findStatic(HalfFloats.class, here, type);
            } catch (ReflectiveOperationException e) {
                throw new IllegalStateException("HalfFloats." + here + " is missing", e);
            }
        }
    }

    /** The float32 value of binary16 {@code bits} (exact). */
    public static float fp16ToFloat(short bits) {
        try {
            return (float) TO_FLOAT.invokeExact(bits);
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@code value} rounded to binary16. */
    public static short floatToFp16(float value) {
        try {
            return (short) TO_FP16.invokeExact(value);
        } catch (Throwable e) {
            throw new IllegalStateException(e);
        }
    }

    /** {@link #fp16ToFloat} as written here (what runs on JDKs without their own). */
    static float fp16ToFloatHere(short bits) {
        int h = bits & 0xFFFF;
        int sign = (h & 0x8000) << 16;
        int exponent = (h >>> 10) & 0x1F;
        int mantissa = h & 0x3FF;
        if (exponent == 0x1F) {
            return Float.intBitsToFloat(sign | 0x7F800000 | (mantissa << 13));
        }
        if (exponent == 0) {
            float v = mantissa * 0x1p-24f; // zero or subnormal
            return sign != 0 ? -v : v;
        }
        return Float.intBitsToFloat(sign | ((exponent + 112) << 23) | (mantissa << 13));
    }

    /** {@link #floatToFp16} as written here (what runs on JDKs without their own). */
    static short floatToFp16Here(float value) {
        int bits = Float.floatToRawIntBits(value);
        int sign = (bits >>> 16) & 0x8000;
        int abs = bits & 0x7FFFFFFF;
        if (abs > 0x7F800000) {
            return (short) (sign | 0x7E00 | ((abs >>> 13) & 0x3FF)); // NaN, kept quiet
        }
        if (abs >= 0x477FF000) {
            return (short) (sign | 0x7C00); // 65520 and beyond: infinity
        }
        if (abs < 0x38800000) { // below 2^-14: subnormal or zero
            int mantissa = (int) Math.rint(Float.intBitsToFloat(abs) * 0x1p24);
            return (short) (sign | mantissa);
        }
        int h = (((abs >>> 23) - 112) << 10) | ((abs & 0x7FFFFF) >>> 13);
        int rest = abs & 0x1FFF;
        if (rest > 0x1000 || rest == 0x1000 && (h & 1) != 0) {
            h++; // a carry moves into the exponent correctly
        }
        return (short) (sign | h);
    }

    /** The float32 value of bfloat16 {@code bits} (exact). */
    public static float bf16ToFloat(short bits) {
        return Float.intBitsToFloat((bits & 0xFFFF) << 16);
    }

    /** {@code value} rounded to bfloat16. */
    public static short floatToBf16(float value) {
        int bits = Float.floatToRawIntBits(value);
        if ((bits & 0x7FFFFFFF) > 0x7F800000) {
            return (short) ((bits >>> 16) | 0x40); // NaN, kept quiet
        }
        return (short) ((bits + 0x7FFF + ((bits >>> 16) & 1)) >>> 16);
    }

    /** The float32 value of a 16-bit element of {@code type}. */
    public static float toFloat(DataType type, short bits) {
        return type == DataType.BFLOAT16 ? bf16ToFloat(bits) : fp16ToFloat(bits);
    }

    /** {@code value} rounded to a 16-bit element of {@code type}. */
    public static short fromFloat(DataType type, float value) {
        return type == DataType.BFLOAT16 ? floatToBf16(value) : floatToFp16(value);
    }

    /** Each of {@code from}'s values (from index 0 to its limit) rounded to {@code type} into {@code to}, at the same index. */
    public static void round(DataType type, java.nio.FloatBuffer from, java.nio.ShortBuffer to) {
        for (int i = 0; i < from.limit(); i++) {
            to.put(i, fromFloat(type, from.get(i)));
        }
    }

    /** Each of {@code from}'s 16-bit values of {@code type} (index 0 to its limit) as a float into {@code to}. */
    public static void widen(DataType type, java.nio.ShortBuffer from, java.nio.FloatBuffer to) {
        for (int i = 0; i < from.limit(); i++) {
            to.put(i, toFloat(type, from.get(i)));
        }
    }
}
