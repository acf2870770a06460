package dev.cohort.cli;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.BackendUnavailableException;
import dev.cohort.api.Backends;
import dev.cohort.api.Connection;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.JobLayout;
import dev.cohort.runtime.threads.NonDistributedBackend;
import dev.cohort.runtime.threads.ThreadsBackend;
import java.net.ServerSocket;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.function.Predicate;
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
        assertThat(Backends.select(null, all, Map.of("COHORT_BACKEND", "threads")))
                .isInstanceOf(ThreadsBackend.class);
        assertThat(Backends.select(null, all, Map.of())).isInstanceOf(NonDistributedBackend.class);
        assertThat(Backends.select("none", all, Map.of("COHORT_BACKEND", "threads")))
                .isInstanceOf(NonDistributedBackend.class);
    }

    private static Map<String, String> layout(int world, int perHost) {
        return vars("RANK=0 WORLD_SIZE=" + world + " LOCAL_RANK=0 LOCAL_WORLD_SIZE=" + perHost + " GROUP_RANK=0");
    }

    /** An engine that declares itself to auto as the real ones do (gloo, shm, hier). */
    private static DistributedBackend engine(
            String name, int minJdk, boolean available, Predicate<JobLayout> suits, int preference) {
        return new DistributedBackend() {
            @Override
            public String name() {
                return name;
            }

            @Override
            public boolean isAvailable() {
                return available;
            }

            @Override
            public String unavailableReason() {
                return available ? "" : "lib" + name + ".so is missing";
            }

            @Override
            public int minimumJdk() {
                return minJdk;
            }

            @Override
            public String olderJdksLack() {
                return "no foreign-memory API for shared memory";
            }

            @Override
            public Optional<AutoFit> autoFit(JobLayout l) {
                return suits.test(l)
                        ? Optional.of(
                                new AutoFit(preference, name + " suits " + l.worldSize() + " on " + l.hostsText()))
                        : Optional.empty();
            }

            @Override
            protected Connection connect() {
                throw new AssertionError();
            }
        };
    }

    private static Map<String, DistributedBackend> engines(boolean glooAvailable) {
        Map<String, DistributedBackend> all = new TreeMap<>(Backends.discover());
        all.put("gloo", engine("gloo", 17, glooAvailable, l -> true, 10));
        all.put("shm", engine("shm", 22, true, JobLayout::oneHost, 30));
        all.put("hier", engine("hier", 22, true, JobLayout::sharedHosts, 20));
        return all;
    }

    /** An engine whose ranks meet at MASTER_ADDR:MASTER_PORT (as gloo, tcp, hier), or not (as shm, mpi). */
    private static DistributedBackend meeting(
            String name, boolean needsAddress, Predicate<JobLayout> suits, int preference) {
        return new DistributedBackend() { // available, as the default says
            @Override
            public String name() {
                return name;
            }

            @Override
            public boolean needsRendezvousAddress() {
                return needsAddress;
            }

            @Override
            public Optional<AutoFit> autoFit(JobLayout l) {
                return suits.test(l) ? Optional.of(new AutoFit(preference, name)) : Optional.empty();
            }

            @Override
            protected Connection connect() {
                throw new AssertionError();
            }
        };
    }

    @Test
    void withoutARendezvousAddressAutoPassesOverEnginesThatMeetAtOne() {
        List<DistributedBackend> all = List.of(
                meeting("gloo", true, l -> true, 10),
                meeting("shm", false, JobLayout::oneHost, 30),
                meeting("mpi", false, l -> true, 1));
        Map<String, String> twoHosts = new java.util.HashMap<>(layout(4, 2));
        twoHosts.put("GROUP_WORLD_SIZE", "2");
        twoHosts.put("OMPI_COMM_WORLD_RANK", "0");
        Map<String, String> oneHost = new java.util.HashMap<>(layout(4, 4));
        oneHost.put("OMPI_COMM_WORLD_RANK", "0");
        // mpirun without -x MASTER_ADDR: shm on one host, mpi across hosts.
        assertThat(Backends.auto(oneHost, 25, all).backend()).isEqualTo("shm");
        assertThat(Backends.auto(twoHosts, 25, all).backend()).isEqualTo("mpi");
        // With an address, every engine is in the running.
        twoHosts.put("MASTER_ADDR", "n0");
        twoHosts.put("MASTER_PORT", "29500");
        assertThat(Backends.auto(twoHosts, 25, all).backend()).isEqualTo("gloo");
        // Nothing that runs without an address: the message says what is missing.
        assertThatThrownBy(() -> Backends.auto(oneHost, 25, List.of(meeting("gloo", true, l -> true, 10))))
                .hasMessageContaining("mpirun gave no MASTER_ADDR and MASTER_PORT")
                .hasMessageContaining("mpirun -x");
        // Without mpirun a missing address is the launch's error, for the engine to name: auto keeps gloo.
        assertThat(Backends.auto(layout(4, 2), 25, all).backend()).isEqualTo("gloo");
    }

    @Test
    void autoPicksTheMostPreferredEngineThatTheJdkRuns() {
        var all = engines(true).values();
        assertThat(Backends.names()).contains("auto");
        assertThat(Backends.auto(Map.of(), 25, all).backend()).isEqualTo("none");
        assertThat(Backends.auto(layout(1, 1), 25, all).backend()).isEqualTo("none");
        assertThat(Backends.auto(layout(4, 4), 25, all).backend()).isEqualTo("shm");
        assertThat(Backends.auto(layout(4, 2), 25, all))
                .isEqualTo(new Backends.AutoChoice("hier", "hier suits 4 on 2"));
        assertThat(Backends.auto(layout(4, 4), 22, all).backend()).isEqualTo("shm");
        assertThat(Backends.auto(layout(4, 4), 17, all).backend()).isEqualTo("gloo");
        assertThat(Backends.auto(layout(4, 2), 21, all))
                .isEqualTo(new Backends.AutoChoice(
                        "gloo", "JDK 21 has no foreign-memory API for shared memory; a JDK >= 22 would use hier"));
        assertThatThrownBy(() ->
                        Backends.auto(layout(4, 2), 25, Backends.discover().values()))
                .isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining("no engine on the class path runs 4 workers")
                .hasMessageContaining("threads");
    }

    @Test
    void autoCountsTheHostsFromGroupWorldSizeWhenHostsRunDifferentNumbersOfWorkers() {
        // 3 workers on 2 hosts (2 + 1): the number of hosts comes from GROUP_WORLD_SIZE.
        for (int local : new int[] {1, 2}) {
            Map<String, String> env = new HashMap<>(layout(3, local));
            env.put("GROUP_WORLD_SIZE", "2");
            assertThat(JobLayout.of(env)).isEqualTo(new JobLayout(3, local, 2));
            assertThat(Backends.auto(env, 25, engines(true).values()))
                    .isEqualTo(new Backends.AutoChoice("hier", "hier suits 3 on 2"));
        }
        assertThat(JobLayout.of(layout(3, 2)).hostsText()).isEqualTo("several");
    }

    @Test
    void autoChoosesByTheOldestJdkOfTheJob() {
        // ./cohort run across nodes sets the oldest JDK any node runs its workers on, so a JDK 25
        // node of a job with a JDK 17 node chooses gloo, as that node does.
        var all = engines(true).values();
        Map<String, String> env = new HashMap<>(layout(4, 2));
        env.put(Backends.ENV_OLDEST_JDK, "17");
        assertThat(Backends.auto(env, 25, all))
                .isEqualTo(new Backends.AutoChoice(
                        "gloo",
                        "a node of this job runs its "
                                + "workers on JDK 17, which has no foreign-memory API for shared memory, so every node uses gloo; "
                                + "JDK >= 22 on every node would use hier"));
        assertThat(Backends.auto(env, 17, all).backend()).isEqualTo("gloo");
        env.put(Backends.ENV_OLDEST_JDK, "22");
        assertThat(Backends.auto(env, 25, all).backend()).isEqualTo("hier");
        env.put(Backends.ENV_OLDEST_JDK, "seventeen");
        assertThatThrownBy(() -> Backends.auto(env, 25, all))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("COHORT_OLDEST_JDK='seventeen' must be a JDK feature version");
    }

    @Test
    void autoTakesTheNextEngineWhenTheChosenOneCannotRunHere() {
        Map<String, DistributedBackend> all = engines(true);
        all.put("hier", engine("hier", 22, false, JobLayout::sharedHosts, 20));
        boolean sharedMemoryJdk = Runtime.version().feature() >= 22;
        assertThat(Backends.select("auto", all, layout(4, 2))).isSameAs(all.get("gloo"));
        all.put("hier", engine("hier", 22, true, JobLayout::sharedHosts, 20));
        assertThat(Backends.select(
                        null,
                        all,
                        vars("COHORT_BACKEND=AUTO RANK=1 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 GROUP_RANK=0")))
                .isSameAs(sharedMemoryJdk ? all.get("hier") : all.get("gloo"));
        Map<String, DistributedBackend> none = engines(false);
        none.put("hier", engine("hier", 22, false, JobLayout::sharedHosts, 20));
        assertThatThrownBy(() -> Backends.select("auto", none, layout(4, 2)))
                .isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining(".so is missing")
                .hasMessageContaining("no other engine on the class path suits this job");
    }

    @Test
    void severalWorkersWithNoBackendNamedGetAutoNeverNone() {
        Map<String, DistributedBackend> all = engines(true);
        // RANK/WORLD_SIZE from some launcher, no --distributed-backend, no COHORT_BACKEND.
        assertThat(Backends.select(null, all, layout(4, 2)).name()).isIn("hier", "gloo");
        assertThat(Backends.select("", all, layout(2, 1)).name()).isEqualTo("gloo");
        assertThat(Backends.select(null, all, layout(1, 1)).name()).isEqualTo("none");
        assertThat(Backends.select(null, all, Map.of()).name()).isEqualTo("none");
        // No LOCAL_* and no address to learn them at: unknown, so nothing that needs shared memory.
        Map<String, String> unknown = vars("RANK=0 WORLD_SIZE=2");
        assertThat(Backends.select(null, all, unknown).name()).isEqualTo("gloo");
        assertThat(Backends.auto(unknown, 25, all.values()).reason())
                .contains("does not say which workers share a host");
        // Asking for none stays none (with a warning on rank 0 naming the ranks that train alone).
        assertThat(Backends.select("none", all, layout(4, 2)).name()).isEqualTo("none");
    }

    @Test
    void withOnlyRanksAndAnAddressAutoLearnsWhichShareAHostFirst() throws Exception {
        Map<String, DistributedBackend> all = engines(true);
        int port;
        try (ServerSocket free = new ServerSocket(0)) {
            port = free.getLocalPort();
        }
        // Two workers of this host told only their rank, the world and where to meet (pods, say).
        ExecutorService ranks = Executors.newFixedThreadPool(2);
        try {
            List<Future<String>> picks = new ArrayList<>();
            for (int r = 0; r < 2; r++) {
                Map<String, String> env = vars("RANK=" + r + " WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=" + port);
                picks.add(ranks.submit(() -> Backends.select(null, all, env).name()));
            }
            for (Future<String> pick : picks) {
                assertThat(pick.get(25, TimeUnit.SECONDS))
                        .isEqualTo(Runtime.version().feature() >= 22 ? "shm" : "gloo");
            }
        } finally {
            ranks.shutdownNow();
        }
        // The probe's store is gone: the engine chosen may host its own on the same port.
        new ServerSocket(port).close();
    }

    @Test
    void unknownNameListsTheAvailableOnes() {
        assertThatThrownBy(() -> Backends.select("horovod", Backends.discover(), Map.of()))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("unknown backend 'horovod'")
                .hasMessageContaining("none, ")
                .hasMessageContaining("threads");
        assertThatThrownBy(() -> Backends.select(null, Backends.discover(), Map.of("COHORT_BACKEND", "nope")))
                .hasMessageContaining("COHORT_BACKEND");
    }

    @Test
    void unavailableBackendSaysWhatIsMissing() {
        DistributedBackend missing = new DistributedBackend() {
            @Override
            public String name() {
                return "fake";
            }

            @Override
            public boolean isAvailable() {
                return false;
            }

            @Override
            public String unavailableReason() {
                return "libfake.so not found; add module cohort-fake";
            }

            @Override
            protected Connection connect() {
                throw new AssertionError();
            }
        };
        Map<String, DistributedBackend> all = new TreeMap<>(Backends.discover());
        all.put("fake", missing);
        assertThatThrownBy(() -> Backends.select("fake", all, Map.of()))
                .isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining("libfake.so not found");
        assertThatThrownBy(missing::initialize)
                .isInstanceOf(BackendUnavailableException.class)
                .hasMessageContaining("cohort-fake");
    }

    @Command(name = "train")
    static final class Train {
        @Option(names = "--batch-size")
        int batchSize = 64;
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
        assertThatThrownBy(() -> choice.backend().initialize())
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("ThreadsWorld.run(4");
    }

    @Test
    void aNameFromTheCommandLineSaysSoAndNamesTheArtifactToAdd() {
        Train train = new Train();
        CommandLine cli = new CommandLine(train);
        BackendChoice choice = BackendOptions.add(cli);
        cli.parseArgs("--distributed-backend", "tcp");
        assertThatThrownBy(choice::backend)
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageStartingWith("backend 'tcp' (from --distributed-backend) is not on the class path: add the "
                        + "Maven artifact dev.cohort:cohort-tcp");
        assertThatThrownBy(() -> Backends.select("tcp")).hasMessageStartingWith("backend 'tcp' (from the program)");
    }

    /** {@code "K=V K=V ..."} as a map: launcher variables written compactly. */
    private static Map<String, String> vars(String spec) {
        return java.util.Arrays.stream(spec.split(" "))
                .map(kv -> kv.split("=", 2))
                .collect(java.util.stream.Collectors.toMap(kv -> kv[0], kv -> kv[1]));
    }
}
