package dev.cohort.runtime.threads;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.ConformanceSuite;
import dev.cohort.testkit.MessageSuite;
import dev.cohort.testkit.SubgroupSuite;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

class ThreadsConformanceTest {

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {1, 2, 3, 4, 7, 8})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void passesTheConformanceSuite(int world) {
        ThreadsWorld threads = new ThreadsWorld(world, world, Duration.ofSeconds(60));
        List<Integer> checks =
                threads.runAll(rank -> ConformanceSuite.run(threads.group(rank)), Duration.ofSeconds(110));
        assertThat(checks).hasSize(world).allSatisfy(c -> assertThat(c).isGreaterThan(10_000));
    }

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {1, 2, 4, 5})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void passesTheSubgroupAndMessageSuites(int world) {
        ThreadsWorld threads = new ThreadsWorld(world, world, Duration.ofSeconds(60));
        List<Integer> checks = threads.runAll(
                rank -> {
                    try {
                        return SubgroupSuite.run(threads.group(rank)) + MessageSuite.run(threads.group(rank));
                    } catch (Exception e) {
                        throw new IllegalStateException(e);
                    }
                },
                Duration.ofSeconds(110));
        assertThat(checks).hasSize(world).allSatisfy(c -> assertThat(c).isGreaterThan(100));
    }
}
