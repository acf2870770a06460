package dev.cohort.cli;

import dev.cohort.api.BackendUnavailableException;
import dev.cohort.api.Backends;
import dev.cohort.api.Connection;
import dev.cohort.api.DistributedBackend;
import dev.cohort.runtime.threads.NonDistributedBackend;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.runtime.threads.ThreadsBackend;
import java.util.HashMap;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class BackendsTest {

    @Test
    void discoversBackendsWithServiceLoader() {
        assertThat(Backends.names()).contains("none", "threads");
    }

    @Test
    void selectsByNameCaseInsensitivelyThenEnvironmentThenNone() {
        Map<String, DistributedBackend> all = Backends.discover();
        assertThat(Backends.select("THREADS", all, Map.of())).isInstanceOf(ThreadsBackend.class);
        assertThat(Backends.select(null, all, Map.of("COHORT_BACKEND", "threads"))).isInstanceOf(ThreadsBackend.class);
        assertThat(Backends.select(null, all, Map.of())).isInstanceOf(NonDistributedBackend.class);
        assertThat(Backends.select("none", all, Map.of("COHORT_BACKEND", "threads"))).isInstanceOf(NonDistributedBackend.class);
    }

    private static Map<String, String> layout(int world, int perHost) {
        return Map.of("RANK", "0", "WORLD_SIZE", Integer.toString(world), "LOCAL_RANK", "0",
                "LOCAL_WORLD_SIZE", Integer.toString(perHost), "GROUP_RANK", "0");
    }

    @Test
    void autoPicksByHostsAndJdk() {
        assertThat(Backends.names()).contains("auto");
        assertThat(Backends.auto(Map.of(), 25).backend()).isEqualTo("none");
        assertThat(Backends.auto(layout(1, 1), 25).backend()).isEqualTo("none");
        assertThat(Backends.auto(layout(4, 4), 25).backend()).isEqualTo("shm");
        assertThat(Backends.auto(layout(4, 2), 25)).isEqualTo(new Backends.AutoChoice("hier",
                "4 workers on 2 hosts: shared memory within each host, Gloo between hosts"));
        assertThat(Backends.auto(layout(4, 4), 22).backend()).isEqualTo("shm");
        assertThat(Backends.auto(layout(4, 4), 17).backend()).isEqualTo("gloo");
        assertThat(Backends.auto(layout(4, 2), 21)).isEqualTo(new Backends.AutoChoice("gloo",
                "JDK 21 has no foreign-memory API for shared memory; a JDK >= 22 would use hier"));
    }

    @Test
    void autoCountsTheHostsFromGroupWorldSizeWhenHostsRunDifferentNumbersOfWorkers() {
        // 3 workers on 2 hosts (2 + 1): hier runs such layouts, given the number of hosts.
        for (int local : new int[] {1, 2}) {
            Map<String, String> env = new HashMap<>(layout(3, local));
            env.put("GROUP_WORLD_SIZE", "2");
            assertThat(Backends.auto(env, 25)).isEqualTo(new Backends.AutoChoice("hier",
                    "3 workers on 2 hosts: shared memory within each host, Gloo between hosts"));
        }
    }

    @Test
    void autoChoosesByTheOldestJdkOfTheJob() {
        // ./cohort run across nodes sets the oldest JDK any node runs its workers on, so a JDK 25
        // node of a job with a JDK 17 node chooses gloo, as that node does.
        Map<String, String> env = new HashMap<>(layout(4, 2));
        env.put(Backends.ENV_OLDEST_JDK, "17");
        assertThat(Backends.auto(env, 25)).isEqualTo(new Backends.AutoChoice("gloo", "a node of this job runs its "
                + "workers on JDK 17, which has no foreign-memory API for shared memory, so every node uses gloo; "
                + "JDK >= 22 on every node would use hier"));
        assertThat(Backends.auto(env, 17).backend()).isEqualTo("gloo");
        env.put(Backends.ENV_OLDEST_JDK, "22");
        assertThat(Backends.auto(env, 25).backend()).isEqualTo("hier");
        env.put(Backends.ENV_OLDEST_JDK, "seventeen");
        assertThatThrownBy(() -> Backends.auto(env, 25)).isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("COHORT_OLDEST_JDK='seventeen' must be a JDK feature version");
    }

    private static DistributedBackend fake(String name) {
        return new DistributedBackend() {
            @Override public String name() { return name; }
            @Override public boolean isAvailable() { return true; }
            @Override protected Connection connect() { throw new AssertionError(); }
        };
    }

    @Test
    void autoFallsBackToGlooWhenTheChosenEngineIsMissing() {
        Map<String, DistributedBackend> all = new TreeMap<>(Backends.discover());
        DistributedBackend gloo = fake("gloo");
        all.put("gloo", gloo);
        all.remove("hier");
        assertThat(Backends.select("auto", all, layout(4, 2))).isSameAs(gloo);
        DistributedBackend hier = fake("hier");
        all.put("hier", hier);
        boolean sharedMemoryJdk = Runtime.version().feature() >= 22;
        assertThat(Backends.select(null, all, Map.of("COHORT_BACKEND", "AUTO", "RANK", "1", "WORLD_SIZE", "4",
                "LOCAL_RANK", "1", "LOCAL_WORLD_SIZE", "2", "GROUP_RANK", "0"))).isSameAs(sharedMemoryJdk ? hier : gloo);
        all.remove("gloo");
        all.remove("hier");
        assertThatThrownBy(() -> Backends.select("auto", all, layout(4, 2)))
                .isInstanceOf(BackendUnavailableException.class).hasMessageContaining("gloo cannot run either");
    }

    @Test
    void unknownNameListsTheAvailableOnes() {
        assertThatThrownBy(() -> Backends.select("horovod", Backends.discover(), Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown backend 'horovod'").hasMessageContaining("none, ").hasMessageContaining("threads");
        assertThatThrownBy(() -> Backends.select(null, Backends.discover(), Map.of("COHORT_BACKEND", "nope")))
                .hasMessageContaining("COHORT_BACKEND");
    }

    @Test
    void unavailableBackendSaysWhatIsMissing() {
        DistributedBackend missing = new DistributedBackend() {
            @Override public String name() { return "fake"; }
            @Override public boolean isAvailable() { return false; }
            @Override public String unavailableReason() { return "libfake.so not found; add module cohort-fake"; }
            @Override protected Connection connect() { throw new AssertionError(); }
        };
        Map<String, DistributedBackend> all = new TreeMap<>(Backends.discover());
        all.put("fake", missing);
        assertThatThrownBy(() -> Backends.select("fake", all, Map.of()))
                .isInstanceOf(BackendUnavailableException.class).hasMessageContaining("libfake.so not found");
        assertThatThrownBy(missing::initialize).isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining("cohort-fake");
    }

    @Command(name = "train")
    static final class Train {
        @Option(names = "--batch-size") int batchSize = 64;
    }

    @Test
    void addsTheBackendOptionAndEveryBackendsOptions() {
        Train train = new Train();
        CommandLine cli = new CommandLine(train);
        BackendChoice choice = BackendOptions.add(cli);
        cli.parseArgs("--distr-backend", "Threads", "--batch-size", "8", "--threads-world-size", "1");
        assertThat(train.batchSize).isEqualTo(8);
        assertThat(choice.backend()).isInstanceOf(ThreadsBackend.class);
        assertThat(choice.using("threads")).isTrue();
        assertThat(choice.using(ThreadsBackend.class)).isTrue();
        assertThat(choice.isDistributed()).isTrue();
        assertThat(cli.getUsageMessage()).contains("--distributed-backend", "--distr-backend", "--threads-world-size");
    }

    @Test
    void threadsWorldSizeOutsideAThreadsWorldIsAClearError() {
        Train train = new Train();
        CommandLine cli = new CommandLine(train);
        BackendChoice choice = BackendOptions.add(cli);
        cli.parseArgs("--distributed-backend", "threads", "--threads-world-size", "4");
        assertThatThrownBy(() -> choice.backend().initialize()).isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("ThreadsWorld.run(4");
    }
}
