package dev.cohort.torch;

import dev.cohort.api.DistributedBackend;
import dev.cohort.runtime.threads.ThreadsBackend;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.time.Duration;
import java.util.List;
import java.util.function.Function;
import org.bytedeco.javacpp.PointerScope;

/** Runs a body on every rank of a threads-engine world, each inside a {@code PointerScope} of its own. */
final class ThreadRanks {

    private ThreadRanks() {}

    static <R> List<R> run(int world, Duration limit, Function<DistributedBackend, R> body) {
        return new ThreadsWorld(world, world, Duration.ofSeconds(30))
                .runAll(
                        rank -> {
                            try (ThreadsBackend backend = new ThreadsBackend()) {
                                backend.initialize();
                                try (PointerScope scope = new PointerScope()) {
                                    return body.apply(backend);
                                }
                            }
                        },
                        limit);
    }
}
