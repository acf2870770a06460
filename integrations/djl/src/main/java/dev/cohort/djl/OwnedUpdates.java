package dev.cohort.djl;

import ai.djl.ndarray.NDArray;
import ai.djl.training.optimizer.Optimizer;
import java.util.Objects;
import java.util.Set;

/**
 * ZeRO (stages 1 and 2) for DJL: the optimizer DJL's parameter server calls, updating only the parameters
 * this rank owns through the user's optimizer, which so keeps state (momentum, Adam's moments) for
 * those alone; the others' gradients are left as they are, and {@link DistributedTrainer} then has
 * each owner broadcast its parameters. Parameters are told by DJL's per-process ids.
 */
final class OwnedUpdates extends Optimizer {

    private final Optimizer optimizer;
    /** The ids of the parameters this rank updates; set once the parameters are laid out. */
    private volatile Set<String> owned = Set.of();

    OwnedUpdates(Optimizer optimizer) {
        super(new Builder());
        this.optimizer = Objects.requireNonNull(optimizer, "optimizer");
    }

    /** From now on, updates the parameters of these ids only. */
    void own(Set<String> ids) {
        this.owned = Set.copyOf(ids);
    }

    @Override
    public void update(String parameterId, NDArray weight, NDArray grad) {
        if (owned.contains(parameterId)) {
            optimizer.update(parameterId, weight, grad);
        }
    }

    /** What Optimizer's constructor takes: nothing of its own (the user's optimizer does the work). */
    private static final class Builder extends OptimizerBuilder<Builder> {
        @Override
        protected Builder self() {
            return this;
        }
    }
}
