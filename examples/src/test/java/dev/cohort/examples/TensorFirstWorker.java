package dev.cohort.examples;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.testkit.WorkerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import org.bytedeco.pytorch.global.torch;

/**
 * A JavaCPP program's first steps: initializes the backend that {@code COHORT_BACKEND} names,
 * checks that no libtorch is mapped yet, then makes its first tensor, which loads libtorch. Prints
 * {@code OK rank R}.
 */
public final class TensorFirstWorker {

    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            try (DistributedBackend backend = Backends.select(null)) {
                backend.initialize();
                if (libtorchMapped()) {
                    throw new AssertionError("initializing the " + backend.name() + " backend loaded libtorch");
                }
                float sum = torch.ones(3).sum().item_float();
                if (sum != 3f || !libtorchMapped()) {
                    throw new AssertionError(
                            "the first tensor's sum is " + sum + ", libtorch mapped: " + libtorchMapped());
                }
                System.out.println("OK rank " + backend.rank());
            }
        });
    }

    private static boolean libtorchMapped() throws java.io.IOException {
        return Files.readString(Path.of("/proc/self/maps")).contains("/libtorch_cpu.so");
    }
}
