package dev.cohort.torch;

import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

/** The parameters a request names to train ({@code DistributeRequest.modelParameters}), as a vector. */
final class ModelParameters {

    private ModelParameters() {}

    /**
     * {@code given} as tensors: a {@code TensorVector}, one {@code Tensor}, a {@code Tensor[]} or an
     * {@code Iterable} of tensors.
     *
     * @throws IllegalArgumentException for anything else, or an element that is not a tensor
     */
    static TensorVector of(Object given) {
        if (given instanceof TensorVector vector) {
            return vector;
        }
        TensorVector out = new TensorVector();
        if (given instanceof Tensor t) {
            out.push_back(t);
        } else if (given instanceof Tensor[] array) {
            for (Tensor t : array) {
                out.push_back(t);
            }
        } else if (given instanceof Iterable<?> items) {
            int i = 0;
            for (Object item : items) {
                if (!(item instanceof Tensor t)) {
                    throw new IllegalArgumentException("modelParameters element " + i + " is a "
                            + (item == null ? "null" : item.getClass().getName())
                            + ", not an org.bytedeco.pytorch.Tensor");
                }
                out.push_back(t);
                i++;
            }
        } else {
            throw new IllegalArgumentException("modelParameters must be a TensorVector, a Tensor, a Tensor[] or an "
                    + "Iterable of tensors, got a " + given.getClass().getName());
        }
        return out;
    }

    /**
     * Every parameter of {@code optimizer}, group after group (libtorch's
     * {@code Optimizer::parameters()} does the same with a deprecation warning).
     */
    static TensorVector ofOptimizer(org.bytedeco.pytorch.Optimizer optimizer) {
        TensorVector all = new TensorVector();
        org.bytedeco.pytorch.OptimizerParamGroupVector groups = optimizer.param_groups();
        for (long g = 0; g < groups.size(); g++) {
            TensorVector params = groups.get(g).params();
            for (long i = 0; i < params.size(); i++) {
                all.push_back(params.get(i));
            }
        }
        return all;
    }

    /**
     * Checks that every parameter {@code optimizer} updates (that takes gradients) is in
     * {@code trained}, whose gradients are averaged.
     *
     * @throws IllegalArgumentException naming how many are not, and what to do
     */
    static void checkCovers(TensorVector trained, TensorVector optimizer) {
        int missing = 0;
        long firstMissing = -1;
        for (long i = 0; i < optimizer.size(); i++) {
            Tensor p = optimizer.get(i);
            if (!p.requires_grad()) {
                continue;
            }
            boolean found = false;
            for (long k = 0; k < trained.size() && !found; k++) {
                found = p.is_same(trained.get(k));
            }
            if (!found) {
                missing++;
                if (firstMissing < 0) {
                    firstMissing = i;
                }
            }
        }
        if (missing > 0) {
            throw new IllegalArgumentException("the optimizer updates " + missing + " parameter(s) (the first is its "
                    + "parameter " + firstMissing + ") that are not among the parameters to train (the request's "
                    + "modelParameters, else the model's); their gradients would not be averaged and the ranks would "
                    + "drift apart: list them in modelParameters, or give the optimizer only the parameters to train");
        }
    }
}
