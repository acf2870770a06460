package dev.cohort.shm;

import dev.cohort.runtime.EngineOptions;
import picocli.CommandLine.Option;

/** The shm backend's command-line options, each next to its default. */
public final class ShmOptions extends EngineOptions<ShmOptions> {

    /**
     * Default bytes one rank's slot holds per pipeline stage (two stages per slot). Each step of a
     * large copying allreduce with 2 ranks touches one segment of the caller's buffer and one and
     * a half of the mapping: 2.5 MiB at 1024 KiB, more than a core's L2 on common x86 parts. 256 KiB
     * measured faster than 1024 KiB for 16 MiB allreduces, and the same as 128 KiB (docs/lab/PERFORMANCE-LOG.md).
     */
    public static final int DEFAULT_SEGMENT_KIB = 256;
    /** Default size of each rank's arena for buffers collectives move in place (see {@code group.allocator()}). */
    public static final int DEFAULT_ARENA_MIB = 256;

    public ShmOptions() {
        super(
                "shm",
                new Help(
                        "Timeout of each collective (default: 300).",
                        "Time for all ranks of the host to attach to the shared mapping (default: 60).",
                        "A collective waiting longer than this is reported with the ranks it waits for "
                                + "(default: 30; it still fails only at --shm-timeout, or at once when a peer died)."));
    }

    @Option(
            names = "--shm-segment-kib",
            paramLabel = "KIB",
            description = "Pipeline segment per rank in KiB; larger messages are cut into segments (default: 256).")
    int segmentKib = DEFAULT_SEGMENT_KIB;

    @Option(
            names = "--shm-arena-mib",
            paramLabel = "MIB",
            description = "Per-rank arena in the shared mapping for buffers that allreduce reads and writes in place "
                    + "(the torch integration's gradient buckets); /dev/shm pages are used only as buffers are "
                    + "allocated; 0 turns it off (default: 256).")
    int arenaMib = DEFAULT_ARENA_MIB;

    public ShmOptions arenaMib(int mib) {
        this.arenaMib = mib;
        arenaBytes();
        return this;
    }

    public ShmOptions segmentKib(int kib) {
        this.segmentKib = kib;
        segmentBytes();
        return this;
    }

    /** The segment size in bytes: 4 KiB to 64 MiB. */
    public long segmentBytes() {
        if (segmentKib < 4 || segmentKib > 64 * 1024) {
            throw new IllegalArgumentException("--shm-segment-kib must be in [4, 65536], got " + segmentKib);
        }
        return segmentKib * 1024L;
    }

    /** The arena size per rank in bytes: 0 (none) to 64 GiB. */
    public long arenaBytes() {
        if (arenaMib < 0 || arenaMib > 64 * 1024) {
            throw new IllegalArgumentException("--shm-arena-mib must be in [0, 65536], got " + arenaMib);
        }
        return arenaMib * 1024L * 1024L;
    }
}
