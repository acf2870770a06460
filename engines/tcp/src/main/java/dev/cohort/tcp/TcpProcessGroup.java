package dev.cohort.tcp;

import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.CollectiveMismatchException;
import dev.cohort.api.collective.Work;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.CallQueue;
import dev.cohort.tcp.algorithms.Disagreement;
import dev.cohort.tcp.algorithms.MeshCalls;
import dev.cohort.tcp.algorithms.MeshCollectives;
import dev.cohort.tcp.transport.PeerMesh;
import java.time.Duration;

/**
 * A {@link dev.cohort.api.collective.ProcessGroup} whose every collective travels over Cohort's
 * {@link PeerMesh} ({@link MeshCollectives}: the consistency check rides in each message).
 *
 * <p>Execution: calls run one at a time in issue order through a {@link CallQueue}: a caller that
 * awaits at once runs its call itself, and calls nobody awaits (gradient buckets started during
 * backward) run on the group's communication thread while the caller computes. After ranks
 * disagree the connections are out of step, so the group refuses every later call.
 */
public final class TcpProcessGroup extends AbstractProcessGroup {

    private static final System.Logger LOG = System.getLogger(TcpProcessGroup.class.getName());

    private final String label;
    private final PeerMesh mesh;
    private final MeshCollectives collectives;

    private final CallQueue queue;
    private final Duration stallTime;
    private final Runnable onClose;
    /** The first time the ranks disagreed: every later call is refused. */
    private final Disagreement disagreement = new Disagreement();

    private final PeerMesh.StallReport stall = new PeerMesh.StallReport() {
        @Override
        public Duration after() {
            return stallTime;
        }

        @Override
        public void report(String what, String waitingFor) {
            LOG.log(
                    System.Logger.Level.WARNING,
                    what + " has waited " + stallTime.toSeconds() + " s; " + waitingFor + "; it fails at its timeout ("
                            + timeout().toSeconds() + " s)" + whereTheRanksStand());
        }
    };

    /** {@code onClose}: runs once the group's calls are done and its connections closed. */
    public TcpProcessGroup(
            String label, PeerMesh mesh, int rank, int size, Duration timeout, Duration stallTime, Runnable onClose) {
        this(label, mesh, rank, size, timeout, stallTime, onClose, new CallQueue.Options());
    }

    /** As above, with the options of the group's call queue. */
    public TcpProcessGroup(
            String label,
            PeerMesh mesh,
            int rank,
            int size,
            Duration timeout,
            Duration stallTime,
            Runnable onClose,
            CallQueue.Options queueOptions) {
        super(rank, size, timeout);
        this.label = label;
        this.mesh = mesh;
        this.stallTime = stallTime;
        this.onClose = onClose;
        this.collectives = new MeshCollectives(mesh, rank, size, label + " " + who());
        this.queue = new CallQueue(
                "cohort-tcp-" + label.replace(' ', '-') + "-rank-" + rank,
                c -> "waiting for its peers",
                e -> {},
                queueOptions);
    }

    @Override
    protected Work start(Collective call, Duration timeout) {
        disagreement.refuseIfSeen(label, who(), call);
        return queue.submit(who(), call, timeout, this::run);
    }

    /** On the queue: the call over the mesh, to the end. */
    private void run(CallQueue.Call running) {
        Collective call = running.collective();
        try {
            if (MeshCalls.carried(call)) {
                collectives.carry(call, running.deadline(), stall);
            } else {
                collectives.agree(call, running.deadline(), stall);
            }
        } catch (CollectiveMismatchException e) {
            throw disagreement.seen(e);
        }
    }

    @Override
    protected void release() {
        queue.close(() -> {
            mesh.close();
            onClose.run();
        });
    }
}
