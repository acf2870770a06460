package dev.cohort.api;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** Parameter fingerprints: the exact sum of the elements' bit patterns, however the elements are held. */
@Timeout(10)
class FingerprintTest {

    @Test
    void bytesOfEveryWidthSumTheirElementsAsIntegers() {
        ByteBuffer b = ByteBuffer.allocate(16).order(ByteOrder.nativeOrder());
        b.putInt(0, 7).putInt(4, -3).putInt(8, Integer.MAX_VALUE).putInt(12, 1);
        assertThat(DivergenceCheck.fingerprint(b, 4)).isEqualTo(7L - 3 + Integer.MAX_VALUE + 1);
        assertThat(DivergenceCheck.fingerprint(b.duplicate().position(4), 4)).isEqualTo(-3L + Integer.MAX_VALUE + 1);
        assertThat(DivergenceCheck.fingerprint(b, 8)).isEqualTo(b.getLong(0) + b.getLong(8));
        long shorts = 0;
        long bytes = 0;
        for (int i = 0; i < 16; i++) {
            bytes += b.get(i);
            shorts += i % 2 == 0 ? b.getShort(i) : 0;
        }
        assertThat(DivergenceCheck.fingerprint(b, 2)).isEqualTo(shorts);
        assertThat(DivergenceCheck.fingerprint(b, 1)).isEqualTo(bytes);
    }

    @Test
    void float32InBytesSumsItsBitPatternsAndChangesWithAnyElement() {
        float[] values = {0.5f, -1.25f, 3e7f};
        DenseBuffer direct = DenseBuffer.allocateDirect(DataType.FLOAT32, values.length);
        long expected = 0;
        for (int i = 0; i < values.length; i++) {
            direct.setDouble(i, values[i]);
            expected += Float.floatToRawIntBits(values[i]);
        }
        assertThat(DivergenceCheck.fingerprint(direct)).isEqualTo(expected);
        direct.setDouble(2, Math.nextUp(3e7f));
        assertThat(DivergenceCheck.fingerprint(direct)).isEqualTo(expected + 1);
    }

    @Test
    void anElementWidthOtherThan8421IsRefused() {
        assertThatThrownBy(() -> DivergenceCheck.fingerprint(ByteBuffer.allocate(8), 0))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("not 0");
    }
}
