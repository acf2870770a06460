package dev.cohort.runtime;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.LinkOption;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** The naming of shared-memory files, and which of them a launcher may remove. */
class SharedMemoryFilesTest {

    @TempDir
    Path dir;

    private static Map<String, String> env(String runId, int restart, int port) {
        Map<String, String> env = new HashMap<>();
        env.put("COHORT_RUN_ID", runId);
        env.put("COHORT_RESTART_COUNT", Integer.toString(restart));
        env.put("MASTER_ADDR", "127.0.0.1");
        env.put("MASTER_PORT", Integer.toString(port));
        return env;
    }

    /** Creates, in the test directory, the file that {@code env}'s group would map. */
    private Path fileOf(Map<String, String> env) throws IOException {
        return Files.createFile(dir.resolve(SharedMemoryFiles.path(env).getFileName()));
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void namesCarryRunIdRestartAndAScopeThatSeparatesJobsWithTheSameRunId() {
        Path a = SharedMemoryFiles.path(env("same", 0, 29500));
        Path b = SharedMemoryFiles.path(env("same", 0, 29501));
        assertThat(a).isNotEqualTo(b);
        assertThat(a.toString()).matches("/dev/shm/cohort-same-0-[0-9a-f]{12}");
        assertThat(SharedMemoryFiles.path(env("same", 2, 29500)).toString())
                .isEqualTo(a.toString().replace("-same-0-", "-same-2-"));
        assertThatThrownBy(() -> SharedMemoryFiles.path(env("bad/id", 0, 29500)))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("COHORT_RUN_ID");
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void removesOnlyThisRunsRegularFilesOfThisScopeUpToTheEndedRestart() throws IOException {
        Path restart0 = fileOf(env("job", 0, 29500));
        Path restart3 = fileOf(env("job", 3, 29500));
        Path laterRestart = fileOf(env("job", 4, 29500));
        Path otherJobSameRunId = fileOf(env("job", 0, 29501));
        Path runIdExtendingOurs = fileOf(env("job-1", 0, 29500));
        Path runIdWithDot = fileOf(env("job.x", 0, 29500));
        Path longerRunId = fileOf(env("jobs", 0, 29500));
        Path notAMapping = Files.createFile(dir.resolve("other-job-0-000000000000"));
        Path link = Files.createSymbolicLink(
                dir.resolve(SharedMemoryFiles.path(env("job", 1, 29500)).getFileName()), notAMapping);
        Path foreign = null;
        if (Integer.valueOf(0).equals(Files.getAttribute(Path.of("/proc/self"), "unix:uid"))) {
            // As root, a file of another user can be made: it must survive.
            foreign = fileOf(env("job", 2, 29500));
            Files.setAttribute(foreign, "unix:uid", 65534);
        }

        SharedMemoryFiles.Removal removal = SharedMemoryFiles.removeLeftovers(dir, env("job", 3, 29500));

        assertThat(removal.removed()).containsExactlyInAnyOrder(restart0, restart3);
        assertThat(removal.failures()).isEmpty();
        assertThat(restart0).doesNotExist();
        assertThat(restart3).doesNotExist();
        for (Path survivor :
                new Path[] {laterRestart, otherJobSameRunId, runIdExtendingOurs, runIdWithDot, longerRunId, notAMapping
                }) {
            assertThat(survivor).exists();
        }
        assertThat(Files.exists(link, LinkOption.NOFOLLOW_LINKS)).isTrue();
        if (foreign != null) {
            assertThat(foreign).exists();
        }
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void groupsOfOneRunHaveTheirOwnFilesWhichTheLeftoverRemovalFindsToo() throws IOException {
        Map<String, String> env = env("job", 0, 29500);
        Path host0 = SharedMemoryFiles.path(env, "host0");
        assertThat(host0.toString()).isEqualTo(SharedMemoryFiles.path(env) + "-host0");
        assertThat(SharedMemoryFiles.path(env, "host1")).isNotEqualTo(host0);
        assertThatThrownBy(() -> SharedMemoryFiles.path(env, "host-1")).isInstanceOf(IllegalArgumentException.class);
        Path group = Files.createFile(dir.resolve(host0.getFileName()));
        Path otherJobsGroup = Files.createFile(dir.resolve(
                SharedMemoryFiles.path(env("job", 0, 29501), "host0").getFileName()));
        assertThat(SharedMemoryFiles.removeLeftovers(dir, env).removed()).containsExactly(group);
        assertThat(otherJobsGroup).exists();
    }

    @Test
    @Timeout(value = 30, unit = TimeUnit.SECONDS)
    void aMissingDirectoryRemovesNothing() {
        SharedMemoryFiles.Removal removal = SharedMemoryFiles.removeLeftovers(dir.resolve("absent"), env("job", 0, 1));
        assertThat(removal.removed()).isEmpty();
        assertThat(removal.failures()).isEmpty();
    }
}
