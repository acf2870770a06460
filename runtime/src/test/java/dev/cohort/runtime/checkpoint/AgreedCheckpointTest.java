package dev.cohort.runtime.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.checkpoint.AgreedCheckpoint;
import dev.cohort.runtime.threads.ThreadsWorld;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Optional;
import java.util.Random;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Ranks with a directory each (each node's own disk): they agree on the newest checkpoint any of
 * them holds, and those that lack its files receive them; copies that differ are refused.
 */
@Timeout(60)
class AgreedCheckpointTest {

    private static final Pattern NAME = Pattern.compile("checkpoint-step-(\\d+)\\.pt");
    private static final String STEP_200 = "checkpoint-step-000000200.pt";

    @TempDir
    Path root;

    private Path dir(int rank) {
        return root.resolve("rank-" + rank);
    }

    private static byte[] bytes(int n, long seed) {
        byte[] b = new byte[n];
        new Random(seed).nextBytes(b);
        return b;
    }

    private List<Optional<Path>> agreeOn(int ranks) {
        ThreadsWorld world = new ThreadsWorld(ranks, 2, Duration.ofSeconds(20));
        return ThreadsWorld.run(ranks, rank -> {
            try (var group = world.group(rank)) {
                return AgreedCheckpoint.newest(group, dir(rank), NAME);
            }
        });
    }

    @Test
    void theNewestOfAnyRankIsBroughtToEveryRank() throws Exception {
        byte[] main = bytes(17 << 20, 1); // more than one chunk
        byte[] shard0 = bytes(1000, 2);
        byte[] shard1 = bytes(0, 3);
        Files.createDirectories(dir(0));
        Files.createDirectories(dir(1));
        Files.write(dir(0).resolve("checkpoint-step-000000100.pt"), bytes(10, 4));
        Files.write(dir(0).resolve(STEP_200), main);
        Files.write(dir(0).resolve(STEP_200 + ".optimizer-200.0-of-2"), shard0);
        Files.write(dir(0).resolve(STEP_200 + ".tmp-4711"), bytes(5, 5)); // a save cut short: never sent
        Files.write(dir(1).resolve("checkpoint-step-000000100.pt"), bytes(10, 4));
        Files.write(dir(1).resolve(STEP_200 + ".optimizer-200.1-of-2"), shard1); // its shard, not the file
        // Rank 2 has no directory yet.

        List<Optional<Path>> agreed = agreeOn(3);

        for (int r = 0; r < 3; r++) {
            assertThat(agreed.get(r)).contains(dir(r).resolve(STEP_200));
            assertThat(Files.readAllBytes(dir(r).resolve(STEP_200))).isEqualTo(main);
            assertThat(Files.readAllBytes(dir(r).resolve(STEP_200 + ".optimizer-200.0-of-2")))
                    .isEqualTo(shard0);
            assertThat(Files.readAllBytes(dir(r).resolve(STEP_200 + ".optimizer-200.1-of-2")))
                    .isEqualTo(shard1);
        }
        try (var files = Files.list(dir(2))) {
            assertThat(files.map(p -> p.getFileName().toString()))
                    .containsExactlyInAnyOrder(
                            STEP_200, STEP_200 + ".optimizer-200.0-of-2", STEP_200 + ".optimizer-200.1-of-2");
        }
    }

    @Test
    void withoutACheckpointAnywhereEveryRankStartsAfresh() throws Exception {
        Files.createDirectories(dir(1));
        Files.write(dir(1).resolve("notes.txt"), bytes(3, 6));
        assertThat(agreeOn(2)).containsExactly(Optional.empty(), Optional.empty());
    }

    @Test
    void copiesThatDifferAreRefusedNamingTheRanks() throws Exception {
        for (int r = 0; r < 2; r++) {
            Files.createDirectories(dir(r));
            Files.write(dir(r).resolve(STEP_200), bytes(64, r)); // rank 1's copy is not rank 0's
        }
        assertThatThrownBy(() -> agreeOn(2))
                .rootCause()
                .isInstanceOf(IllegalStateException.class)
                .hasMessageStartingWith("checkpoint " + STEP_200 + ": rank 0's and rank 1's copies of " + STEP_200
                        + " differ (64 bytes, CRC32C ")
                .hasMessageEndingWith("one is corrupt or from another job; remove the wrong one and resume again");
    }
}
