package dev.cohort.shm;

import dev.cohort.api.Timeouts;
import java.time.Duration;
import picocli.CommandLine.Option;

/** The shm backend's command-line options, each next to its default. */
public final class ShmOptions {

    /** Default timeout of each collective. */
    public static final Duration DEFAULT_TIMEOUT = Duration.ofMinutes(5);
    /** Default time allowed for all ranks of the host to attach to the shared mapping. */
    public static final Duration DEFAULT_CONNECT_TIMEOUT = Duration.ofSeconds(60);
    /** Default time after which a waiting collective is reported as stalled. */
    public static final Duration DEFAULT_STALL_TIME = Duration.ofSeconds(30);
    /**
     * Default bytes one rank's slot holds per pipeline stage (two stages per slot). Each step of a
     * large copying allreduce with 2 ranks touches one segment of the caller's buffer and one and
     * a half of the mapping: 2.5 MiB at 1024 KiB, more than a core's L2 on common x86 parts. 256 KiB
     * measured faster than 1024 KiB for 16 MiB allreduces, and the same as 128 KiB (docs/lab/PERFORMANCE-LOG.md).
     */
    public static final int DEFAULT_SEGMENT_KIB = 256;
    /** Default size of each rank's arena for buffers collectives move in place (see {@code group.allocator()}). */
    public static final int DEFAULT_ARENA_MIB = 256;

    @Option(names = "--shm-timeout", paramLabel = "SECONDS",
            description = "Timeout of each collective (default: 300).")
    double timeoutSeconds = DEFAULT_TIMEOUT.toSeconds();

    @Option(names = "--shm-connect-timeout", paramLabel = "SECONDS",
            description = "Time for all ranks of the host to attach to the shared mapping (default: 60).")
    double connectTimeoutSeconds = DEFAULT_CONNECT_TIMEOUT.toSeconds();

    @Option(names = "--shm-stall-seconds", paramLabel = "SECONDS",
            description = "A collective waiting longer than this is reported with the ranks it waits for "
                    + "(default: 30; it still fails only at --shm-timeout, or at once when a peer died).")
    double stallSeconds = DEFAULT_STALL_TIME.toSeconds();

    @Option(names = "--shm-segment-kib", paramLabel = "KIB",
            description = "Pipeline segment per rank in KiB; larger messages are cut into segments (default: 256).")
    int segmentKib = DEFAULT_SEGMENT_KIB;

    @Option(names = "--shm-arena-mib", paramLabel = "MIB",
            description = "Per-rank arena in the shared mapping for buffers that allreduce reads and writes in place "
                    + "(the torch integration's gradient buckets); /dev/shm pages are used only as buffers are "
                    + "allocated; 0 turns it off (default: 256).")
    int arenaMib = DEFAULT_ARENA_MIB;

    public ShmOptions timeout(Duration timeout) {
        this.timeoutSeconds = Timeouts.toSeconds("--shm-timeout", timeout);
        return this;
    }

    public ShmOptions connectTimeout(Duration timeout) {
        this.connectTimeoutSeconds = Timeouts.toSeconds("--shm-connect-timeout", timeout);
        return this;
    }

    public ShmOptions stallTime(Duration stall) {
        this.stallSeconds = Timeouts.toSeconds("--shm-stall-seconds", stall);
        return this;
    }

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

    public Duration timeout() {
        return Timeouts.ofSeconds("--shm-timeout", timeoutSeconds);
    }

    public Duration connectTimeout() {
        return Timeouts.ofSeconds("--shm-connect-timeout", connectTimeoutSeconds);
    }

    public Duration stallTime() {
        return Timeouts.ofSeconds("--shm-stall-seconds", stallSeconds);
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
