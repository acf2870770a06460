package com.example.firsthour;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.torch.MiniBatch;
import dev.cohort.torch.ShardedLoader;
import dev.cohort.torch.TensorSamples;
import dev.cohort.torch.TorchTraining;
import java.io.DataOutputStream;
import java.io.FileOutputStream;
import java.io.IOException;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.MNIST;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorVector;
import org.bytedeco.pytorch.global.torch;

/**
 * A plain JavaCPP PyTorch MNIST program, as its users write them (a module of three linear
 * layers, SGD, the dataset read by libtorch's MNIST reader), made data-parallel with the changes
 * docs/TORCH.md shows: a backend, {@code TorchTraining.distribute}, the returned optimizer and
 * shard. Arguments: the MNIST folder, the batch per worker, the number of training examples used,
 * the file the root writes the final parameters to (float32, big-endian).
 */
public class SimpleMnist {

    static class Net extends Module {
        final LinearImpl fc1 = register_module("fc1", new LinearImpl(784, 64));
        final LinearImpl fc2 = register_module("fc2", new LinearImpl(64, 32));
        final LinearImpl fc3 = register_module("fc3", new LinearImpl(32, 10));

        Tensor forward(Tensor x) {
            x = torch.relu(fc1.forward(x.reshape(x.size(0), 784)));
            x = torch.relu(fc2.forward(x));
            return torch.log_softmax(fc3.forward(x), 1);
        }
    }

    public static void main(String[] args) throws IOException {
        String folder = args[0];
        int batchPerWorker = Integer.parseInt(args[1]);
        long examples = Long.parseLong(args[2]);
        torch.manual_seed(1);
        try (DistributedBackend backend = Backends.select(null)) { // the engine `cohort run` chose
            backend.initialize();
            MNIST mnist = new MNIST(folder);
            TensorSamples trainSet = new TensorSamples(
                    mnist.images().narrow(0, 0, examples), mnist.targets().narrow(0, 0, examples));
            Net net = new Net();
            SGD sgd = new SGD(net.parameters(), new SGDOptions(0.05));
            TorchTraining<Net, ShardedLoader, Object> training =
                    TorchTraining.distribute(backend, net, sgd, ShardedLoader.of(trainSet, batchPerWorker, true, 42));
            for (int epoch = 1; epoch <= 2; epoch++) {
                double lossSum = 0;
                int batches = 0;
                for (MiniBatch batch : training.trainingData().epoch(epoch)) {
                    training.optimizer().zero_grad();
                    Tensor loss = torch.nll_loss(training.model().forward(batch.inputs()), batch.targets());
                    loss.backward();
                    training.optimizer().step();
                    lossSum += loss.item_double();
                    batches++;
                }
                double meanLoss = backend.averageAll(lossSum / batches);
                if (backend.isRootWorker()) {
                    System.out.printf("epoch %d: loss %.4f on %d workers%n", epoch, meanLoss, backend.worldSize());
                }
            }
            if (backend.isRootWorker()) {
                writeParameters(net.parameters(), args[3]);
            }
        }
    }

    private static void writeParameters(TensorVector parameters, String file) throws IOException {
        try (DataOutputStream out = new DataOutputStream(new FileOutputStream(file))) {
            for (long i = 0; i < parameters.size(); i++) {
                Tensor p = parameters.get(i).contiguous();
                float[] values = new float[(int) p.numel()];
                p.data_ptr_float().get(values);
                for (float v : values) {
                    out.writeFloat(v);
                }
            }
        }
    }
}
