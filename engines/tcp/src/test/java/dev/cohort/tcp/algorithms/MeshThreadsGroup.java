package dev.cohort.tcp.algorithms;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.PendingWork;
import dev.cohort.tcp.transport.PeerMesh;
import java.time.Duration;

/**
 * A process group of the mesh alone, without c10d or Gloo: every call that moves bytes goes over
 * the {@link PeerMesh} through {@link MeshCollectives}; a call that moves none only has its
 * signature checked, as the gloo group does before it would hand such a call to Gloo.
 */
final class MeshThreadsGroup extends AbstractProcessGroup {

    private final PeerMesh mesh;
    private final MeshCollectives collectives;

    /** {@code blocksFromBytes}: allreduces from this size on reduce-scatter, then allgather. */
    MeshThreadsGroup(PeerMesh mesh, int rank, int size, Duration timeout, long blocksFromBytes) {
        super(rank, size, timeout);
        this.mesh = mesh;
        this.collectives = new MeshCollectives(mesh, rank, size, "mesh " + who(), blocksFromBytes);
    }

    @Override
    protected Work start(Collective call, Duration timeout) {
        long deadline = System.nanoTime() + timeout.toNanos();
        synchronized (mesh) {
            if (MeshCalls.carried(call)) {
                collectives.carry(call, deadline, null);
            } else {
                collectives.agree(call, deadline, null);
            }
        }
        PendingWork done = new PendingWork(call, timeout, w -> null);
        done.complete();
        return done;
    }

    @Override
    protected void release() {
        mesh.close();
    }
}
