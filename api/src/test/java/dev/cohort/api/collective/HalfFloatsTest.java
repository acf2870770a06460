package dev.cohort.api.collective;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.util.SplittableRandom;
import org.junit.jupiter.api.Test;

class HalfFloatsTest {

    @Test
    void everyFloat16ValueRoundTripsAndKnownValuesConvertExactly() {
        for (int bits = 0; bits < 1 << 16; bits++) {
            float f = HalfFloats.fp16ToFloatHere((short) bits);
            assertThat(Float.floatToIntBits(HalfFloats.fp16ToFloat((short) bits)))
                    .isEqualTo(Float.floatToIntBits(f));
            if (Float.isNaN(f)) {
                assertThat(Float.isNaN(HalfFloats.fp16ToFloatHere(HalfFloats.floatToFp16Here(f))))
                        .isTrue();
            } else {
                assertThat(HalfFloats.floatToFp16Here(f) & 0xFFFF)
                        .as("bits %04x", bits)
                        .isEqualTo(bits);
            }
        }
        assertThat(HalfFloats.floatToFp16Here(1f)).isEqualTo((short) 0x3C00);
        assertThat(HalfFloats.floatToFp16Here(65504f)).isEqualTo((short) 0x7BFF);
        assertThat(HalfFloats.floatToFp16Here(65519f)).isEqualTo((short) 0x7BFF);
        assertThat(HalfFloats.floatToFp16Here(65520f)).isEqualTo((short) 0x7C00); // rounds to infinity
        assertThat(HalfFloats.floatToFp16Here(-0x1p-24f)).isEqualTo((short) 0x8001); // smallest subnormal
        assertThat(HalfFloats.floatToFp16Here(0x1p-26f)).isEqualTo((short) 0); // below half of it
        assertThat(HalfFloats.floatToFp16Here(1 + 0x1p-11f)).isEqualTo((short) 0x3C00); // a tie goes to even
        assertThat(HalfFloats.floatToFp16Here(1 + 3 * 0x1p-11f)).isEqualTo((short) 0x3C02);
    }

    @Test
    void float16RoundingAgreesWithTheJdksWhereItHasOne() throws Exception {
        Method jdk;
        try {
            jdk = Float.class.getMethod("floatToFloat16", float.class); // JDK 20+
        } catch (NoSuchMethodException e) {
            return;
        }
        SplittableRandom random = new SplittableRandom(1);
        for (int i = 0; i < 1_000_000; i++) {
            float f = Float.intBitsToFloat(random.nextInt());
            if (!Float.isNaN(f)) {
                assertThat(HalfFloats.floatToFp16Here(f)).as("%s", f).isEqualTo((short) jdk.invoke(null, f));
                assertThat(HalfFloats.floatToFp16(f)).as("%s", f).isEqualTo((short) jdk.invoke(null, f));
            }
        }
    }

    @Test
    void everyBfloat16ValueRoundTripsAndRoundsToNearestEven() {
        for (int bits = 0; bits < 1 << 16; bits++) {
            float f = HalfFloats.bf16ToFloat((short) bits);
            if (!Float.isNaN(f)) {
                assertThat(HalfFloats.floatToBf16(f) & 0xFFFF).isEqualTo(bits);
            }
        }
        assertThat(HalfFloats.floatToBf16(1 + 0x1p-8f)).isEqualTo((short) 0x3F80); // a tie goes to even
        assertThat(HalfFloats.floatToBf16(1 + 3 * 0x1p-8f)).isEqualTo((short) 0x3F82);
        assertThat(HalfFloats.floatToBf16(Float.MAX_VALUE)).isEqualTo((short) 0x7F80); // rounds to infinity
        assertThat(Float.isNaN(HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(Float.NaN))))
                .isTrue();
    }

    @Test
    void sixteenBitBuffersHoldBitsAndReadAsValues() {
        DenseBuffer b = DenseBuffer.allocateDirect(DataType.BFLOAT16, 3);
        b.setDouble(0, 1.5);
        b.setDouble(1, -2.25);
        assertThat(b.getDouble(0)).isEqualTo(1.5);
        assertThat(b.getDouble(1)).isEqualTo(-2.25);
        assertThat(b.byteSize()).isEqualTo(6);
        DenseBuffer heap = DenseBuffer.of(new short[] {0x3C00, (short) 0xC000}, DataType.FLOAT16);
        assertThat(heap.getDouble(0)).isEqualTo(1.0);
        assertThat(heap.getDouble(1)).isEqualTo(-2.0);
        assertThat(heap.copy().getDouble(1)).isEqualTo(-2.0);
    }
}
