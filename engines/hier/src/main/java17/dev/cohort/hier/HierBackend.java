package dev.cohort.hier;

import dev.cohort.api.Connection;
import dev.cohort.api.JobLayout;
import dev.cohort.runtime.EngineBackend;
import dev.cohort.gloo.GlooBackend;
import dev.cohort.shm.ShmBackend;
import java.util.List;
import java.util.Map;
import java.util.OptionalInt;

/**
 * The {@code hier} backend: shared memory ({@code shm}) among the ranks of each host, Gloo
 * between hosts, one leader per host (its {@code LOCAL_RANK} 0). An allreduce is reduced within
 * each host, allreduced among the leaders and broadcast within each host again; the other
 * collectives are built the same way (see {@code HierProcessGroup}). On one host it is shm with
 * no leaders' group.
 *
 * <p>The hosts come from the launch environment ({@code RANK}, {@code WORLD_SIZE},
 * {@code LOCAL_RANK}, {@code LOCAL_WORLD_SIZE}, {@code GROUP_RANK}; every host runs
 * {@code LOCAL_WORLD_SIZE} ranks); the leaders meet at {@code MASTER_ADDR:MASTER_PORT}, where the
 * leader of host 0 hosts Gloo's store, so {@code MASTER_ADDR} is an address of host 0, as with
 * torchrun.
 *
 * <p>Compiled for Java 17 like {@link ShmBackend}: it loads the engine ({@code HierEngine},
 * JDK 22+) only when {@link #isAvailable()}, and otherwise says what is missing.
 */
public final class HierBackend extends EngineBackend<HierOptions> {

    public static final String NAME = "hier";

    /**
     * With these options, in {@code environment}: {@code System.getenv()}, or a launch environment
     * of a program's own making (one that starts ranks itself).
     */
    public HierBackend(HierOptions options, Map<String, String> environment) {
        super(NAME, options, environment);
    }

    /** With default options, in this process's environment (as {@link java.util.ServiceLoader} makes it). */
    public HierBackend() {
        super(NAME, new HierOptions());
    }

    /**
     * Workers on several hosts, some host holding more than one: shared memory within each, Gloo
     * among their leaders. With one worker per host there is nothing to share, and gloo does it all.
     */
    @Override
    public OptionalInt autoPreference(JobLayout layout) {
        return layout.sharedHosts() ? OptionalInt.of(20) : OptionalInt.empty();
    }

    @Override
    public String autoReason(JobLayout layout) {
        return layout.worldSize() + " workers on " + layout.hostsText() + " hosts: shared memory within each host, Gloo between hosts";
    }

    @Override
    protected String missing() {
        ShmBackend shm = new ShmBackend();
        if (!shm.isAvailable()) {
            return "the hier backend uses shm within each host: " + shm.unavailableReason();
        }
        GlooBackend gloo = new GlooBackend();
        if (!gloo.isAvailable()) {
            return "the hier backend uses gloo between hosts: " + gloo.unavailableReason();
        }
        return null;
    }

    @Override
    protected Connection connect() {
        return connectLoaded("dev.cohort.hier.HierEngine", HierOptions.class);
    }

    /** shm's, within each host. */
    @Override
    public List<String> jvmOptions() {
        return new ShmBackend().jvmOptions();
    }

    /** shm's: the foreign-memory API. */
    @Override
    public int minimumJdk() {
        return ShmBackend.MIN_JDK;
    }

    @Override
    public String olderJdksLack() {
        return "no foreign-memory API for shared memory";
    }
}
