package dev.cohort.runtime.p2p;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveException;
import dev.cohort.api.collective.CollectiveTimeoutException;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.Reissue;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.runtime.store.InMemoryStore;
import dev.cohort.runtime.store.Store;
import dev.cohort.runtime.threads.ThreadsWorld;
import dev.cohort.testkit.MessageSuite;
import java.net.InetAddress;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

/**
 * The post office's sends and receives over real loopback connections, its ranks threads of one
 * JVM (collectives through the threads engine): the message suite, a peer that goes away, and a
 * receive nothing answers.
 */
class PostOfficeTest {

    @ParameterizedTest(name = "world {0}")
    @ValueSource(ints = {2, 3, 4})
    @Timeout(value = 120, unit = TimeUnit.SECONDS)
    void passesTheMessageSuite(int world) {
        ThreadsWorld threads = new ThreadsWorld(world, world, Duration.ofSeconds(60));
        Store store = new InMemoryStore();
        List<Integer> checks = threads.runAll(
                rank -> {
                    try (ProcessGroup g = new Letters(threads.group(rank), store, Duration.ofSeconds(60))) {
                        return MessageSuite.run(g);
                    }
                },
                Duration.ofSeconds(110));
        assertThat(checks).allSatisfy(c -> assertThat(c).isGreaterThan(50));
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aPeerThatClosesFailsWhatWaitsForItNamingIt() {
        onTwoRanks(Duration.ofSeconds(30), (rank, g) -> {
            if (rank == 0) {
                g.send(DenseBuffer.of(new float[] {1}), 1, 0).await(); // connects the pair
                g.barrier().await();
                g.close();
            } else {
                float[] one = new float[1];
                g.recv(DenseBuffer.of(one), 0, 0).await();
                Work never = g.recv(DenseBuffer.of(one), 0, 1);
                g.barrier().await();
                assertThatThrownBy(never::await)
                        .isInstanceOf(CollectiveException.class)
                        .hasMessageContaining("lost rank 0");
                assertThatThrownBy(() -> g.send(DenseBuffer.of(one), 0, 2).await())
                        .hasMessageContaining("lost rank 0");
            }
        });
    }

    @Test
    @Timeout(value = 60, unit = TimeUnit.SECONDS)
    void aReceiveNothingAnswersTimesOutNamingThePeerAndTag() {
        onTwoRanks(Duration.ofSeconds(2), (rank, g) -> {
            if (rank == 1) {
                g.send(DenseBuffer.of(new int[] {1}), 0, 5).await();
            } else {
                int[] x = new int[1];
                g.recv(DenseBuffer.of(x), 1, 5).await();
                assertThatThrownBy(() -> g.recv(DenseBuffer.of(x), 1, 6).await())
                        .isInstanceOf(CollectiveTimeoutException.class)
                        .hasMessageContaining("tag 6");
            }
            g.barrier().await();
        });
    }

    /** What one rank does with its group. */
    private interface RankBody {
        void run(int rank, ProcessGroup group) throws Exception;
    }

    /** Runs {@code body} on 2 thread ranks whose groups' calls time out after {@code timeout}; closes the groups. */
    private static void onTwoRanks(Duration timeout, RankBody body) {
        ThreadsWorld threads = new ThreadsWorld(2, 2, Duration.ofSeconds(30));
        Store store = new InMemoryStore();
        threads.runAll(
                rank -> {
                    try (ProcessGroup g = new Letters(threads.group(rank), store, timeout)) {
                        body.run(rank, g);
                    }
                    return null;
                },
                Duration.ofSeconds(50));
    }

    /** Collectives through a threads group, sends and receives through a post office. */
    private static final class Letters extends AbstractProcessGroup {
        private final ProcessGroup threads;

        Letters(ProcessGroup threads, Store store, Duration timeout) {
            this(threads, store, timeout, Optional.empty());
        }

        Letters(ProcessGroup threads, Store store, Duration timeout, Optional<JobSecret> secret) {
            super(threads.rank(), threads.size(), timeout);
            this.threads = threads;
            int rank = threads.rank();
            int size = threads.size();
            messagesThrough(() -> new PostOffice(
                    rank,
                    size,
                    InetAddress.getLoopbackAddress(),
                    Directory.of(store, "p2p/"),
                    "letters rank " + rank + " of " + size,
                    RankNames.PLAIN,
                    secret));
        }

        @Override
        protected Work start(Collective call, Duration timeout) {
            return Reissue.on(threads, call);
        }

        @Override
        protected void release() {
            threads.close();
        }
    }
}
