package dev.cohort.torch;

import dev.cohort.api.DivergenceCheck;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.libtorch.LibTorch;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.StringTensorDict;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;

/**
 * The {@link DivergenceCheck} of a distributed optimizer's parameters, after its steps: the
 * parameters are named as the model names them ({@code fc1.weight}), else by their place among
 * the optimizer's.
 */
final class DivergenceWatch {

    private final DivergenceCheck check;
    private final List<Tensor> parameters = new ArrayList<>();
    private final List<String> names = new ArrayList<>();
    private long steps;

    DivergenceWatch(ProcessGroup group, TensorVector params, Module model, int every) {
        this.check = new DivergenceCheck(group, every);
        List<String> modelNames = new ArrayList<>();
        List<Long> modelAddresses = new ArrayList<>();
        if (model != null) {
            StringTensorDict named = model.named_parameters(true);
            for (long i = 0; i < named.size(); i++) {
                modelNames.add(named.get(i).key().getString());
                modelAddresses.add(named.get(i).value().data_ptr().address());
            }
        }
        for (long i = 0; i < params.size(); i++) {
            Tensor p = params.get(i);
            int at = modelAddresses.indexOf(p.data_ptr().address());
            parameters.add(LibTorch.retain(new Tensor(p)));
            names.add(at >= 0 ? modelNames.get(at) : "parameter " + i + " of the optimizer");
        }
    }

    /** Counts a step; at the steps the check says are due, compares the parameters across ranks. */
    void afterStep() {
        steps++;
        if (!check.due(steps)) {
            return;
        }
        long[] fingerprints = new long[parameters.size()];
        for (int i = 0; i < fingerprints.length; i++) {
            fingerprints[i] = DivergenceCheck.fingerprint(TensorBuffers.view(parameters.get(i)));
        }
        check.compare(steps, fingerprints, names::get);
    }
}
