package dev.cohort.tcp.transport;

import dev.cohort.runtime.RankNames;
import dev.cohort.runtime.auth.JobSecret;
import java.time.Duration;
import java.util.Objects;
import java.util.Optional;

/**
 * What a rank brings to a {@link PeerMesh} when it connects ({@link MeshConnector}).
 *
 * @param rank        this rank, from 0
 * @param size        the group's ranks
 * @param headerWords the longs of header each message carries (what they mean is the caller's)
 * @param timeout     how long connecting may take before it fails with a {@code JoinException}
 * @param spin        how long a rank waiting for its peers' bytes polls before it sleeps
 * @param who         this rank, as errors name it
 * @param names       how messages name the ranks
 * @param secret      the job's secret every connection proves, if any
 */
public record MeshSpec(
        int rank,
        int size,
        int headerWords,
        Duration timeout,
        Duration spin,
        String who,
        RankNames names,
        Optional<JobSecret> secret) {

    public MeshSpec {
        if (size < 1 || rank < 0 || rank >= size) {
            throw new IllegalArgumentException("rank " + rank + " is not in a group of " + size);
        }
        Objects.requireNonNull(timeout, "timeout");
        Objects.requireNonNull(spin, "spin");
        Objects.requireNonNull(who, "who");
        Objects.requireNonNull(names, "names");
        Objects.requireNonNull(secret, "secret");
    }
}
