package dev.cohort.torch;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.DistributeRequest;
import dev.cohort.libtorch.LibTorch;
import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.bytedeco.pytorch.Device;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorOptions;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Tensors Cohort cannot move are refused with a message naming them, before any byte is read: a
 * tensor off the CPU (its address is device memory: reading it would crash the process; a "meta"
 * tensor stands in for a GPU one here), a non-contiguous one, one of an unsupported type.
 */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class TensorChecksTest {

    @BeforeAll
    static void load() {
        LibTorch.load();
    }

    private static Tensor onMeta() {
        return torch.ones(new long[] {4}, new TensorOptions(new Device("meta")));
    }

    @Test
    void aTensorOffTheCpuIsRefusedNamingItsDevice() {
        assertThatThrownBy(() -> TensorBuffers.view(onMeta()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("the tensor is on device 'meta'")
                .hasMessageContaining("Cohort moves CPU tensors only");
    }

    @Test
    void aNonContiguousTensorIsRefused() {
        Tensor transposed = torch.ones(2, 3).t();
        assertThatThrownBy(() -> TensorBuffers.view(transposed))
                .hasMessageContaining("the tensor is not contiguous; call contiguous() first");
    }

    @Test
    void aTensorOfAnUnsupportedTypeIsRefusedNamingTheType() {
        Tensor bytes = torch.ones(new long[] {3}, new TensorOptions(torch.ScalarType.Byte));
        assertThatThrownBy(() -> TensorBuffers.view(bytes))
                .hasMessageContaining("the tensor: tensors of type Byte are not supported");
    }

    @Test
    void sixteenBitTensorsAreMovedAsTheyAre() {
        Tensor half = torch.ones(new long[] {3}, new TensorOptions(torch.ScalarType.Half))
                .mul(new org.bytedeco.pytorch.Scalar(1.5));
        Tensor brain = torch.ones(new long[] {2}, new TensorOptions(torch.ScalarType.BFloat16))
                .neg();
        assertThat(TensorBuffers.view(half).dataType()).isEqualTo(dev.cohort.api.collective.DataType.FLOAT16);
        assertThat(TensorBuffers.view(half).getDouble(2)).isEqualTo(1.5);
        assertThat(TensorBuffers.view(brain).dataType()).isEqualTo(dev.cohort.api.collective.DataType.BFLOAT16);
        assertThat(TensorBuffers.view(brain).getDouble(1)).isEqualTo(-1.0);
    }

    @Test
    void distributingAModelOffTheCpuFailsOnEveryRankNamingTheParameter() {
        List<String> errors = ThreadsWorld.run(2, rank -> {
            try (ThreadsBackend backend = new ThreadsBackend()) {
                backend.initialize();
                Module model = new Module();
                model.register_parameter("weight", onMeta(), true);
                try {
                    backend.distribute(DistributeRequest.of(model, null, null, null));
                    return "distributed";
                } catch (IllegalArgumentException e) {
                    return e.getMessage();
                }
            }
        });
        assertThat(errors).allSatisfy(m -> assertThat(m).contains("parameter 0 of the model is on device 'meta'"));
    }
}
