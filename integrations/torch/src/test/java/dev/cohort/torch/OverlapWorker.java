package dev.cohort.torch;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.testkit.WorkerProcess;
import org.bytedeco.pytorch.global.torch;

/**
 * A worker process of the overlap test: {@link OverlapTraining#measure} on the backend named
 * {@code args[0]}; prints {@link OverlapTraining.Overlap#line()} and a readable line.
 */
public final class OverlapWorker {

    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            try (DistributedBackend backend = Backends.select(args[0])) {
                backend.initialize();
                torch.set_num_threads(1);
                OverlapTraining.Overlap o = OverlapTraining.measure(backend, OverlapTest.BLOCKS, OverlapTest.STEPS);
                System.out.println(o.line());
                System.out.println(o.describe());
                backend.barrier();
            }
        });
    }
}
