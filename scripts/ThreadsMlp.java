import static org.bytedeco.pytorch.global.torch.cross_entropy;
import static org.bytedeco.pytorch.global.torch.relu;

import java.util.Locale;
import java.util.Random;
import org.bytedeco.javacpp.PointerScope;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.Module;
import org.bytedeco.pytorch.SGD;
import org.bytedeco.pytorch.SGDOptions;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;

/**
 * A small MNIST-like MLP (784 - 128 - 10, batch 64, plain SGD) trained with JavaCPP's PyTorch on
 * synthetic 28x28 "images" (each class a fixed random pattern plus noise), in the default package:
 * what a first program made distributed looks like, for scripts/bench-threads.sh. It sets no
 * thread count itself, so libtorch and OpenBLAS take theirs from the environment (as under
 * {@code cohort run}). Prints one JSON line: the training time, the steps, libtorch's threads and
 * the last loss.
 *
 *   java -cp CLASSES:PYTORCH_JARS ThreadsMlp [STEPS]
 */
public final class ThreadsMlp {

    private static final int PIXELS = 784;
    private static final int CLASSES = 10;
    private static final int BATCH = 64;
    private static final int SAMPLES = 4096;

    public static void main(String[] args) {
        int steps = args.length > 0 ? Integer.parseInt(args[0]) : 1500;
        torch.manual_seed(1);
        Random random = new Random(1);
        float[][] patterns = new float[CLASSES][PIXELS];
        for (float[] p : patterns) {
            for (int i = 0; i < PIXELS; i++) {
                p[i] = (float) random.nextGaussian();
            }
        }
        float[] images = new float[SAMPLES * PIXELS];
        long[] labels = new long[SAMPLES];
        for (int s = 0; s < SAMPLES; s++) {
            int c = random.nextInt(CLASSES);
            labels[s] = c;
            for (int i = 0; i < PIXELS; i++) {
                images[s * PIXELS + i] = patterns[c][i] + 2f * (float) random.nextGaussian();
            }
        }
        Tensor x = Tensor.create(images, SAMPLES, PIXELS);
        Tensor y = Tensor.create(labels, SAMPLES);
        Net net = new Net();
        SGD sgd = new SGD(net.parameters(), new SGDOptions(0.05));
        float last = Float.NaN;
        long start = System.nanoTime();
        for (int step = 0; step < steps; step++) {
            try (PointerScope scope = new PointerScope()) {
                long from = (long) step * BATCH % (SAMPLES - BATCH);
                sgd.zero_grad();
                Tensor loss = cross_entropy(net.forward(x.narrow(0, from, BATCH)), y.narrow(0, from, BATCH));
                loss.backward();
                sgd.step();
                if (step == steps - 1) {
                    last = loss.item_float();
                }
            }
        }
        double seconds = (System.nanoTime() - start) / 1e9;
        System.out.println(String.format(Locale.ROOT,
                "{\"train_s\": %.3f, \"steps\": %d, \"torch_threads\": %d, \"OMP_NUM_THREADS\": \"%s\", "
                        + "\"OPENBLAS_NUM_THREADS\": \"%s\", \"loss\": %.4f}",
                seconds, steps, torch.get_num_threads(), System.getenv("OMP_NUM_THREADS"),
                System.getenv("OPENBLAS_NUM_THREADS"), last));
    }

    static final class Net extends Module {
        private final LinearImpl fc1 = register_module("fc1", new LinearImpl(PIXELS, 128));
        private final LinearImpl fc2 = register_module("fc2", new LinearImpl(128, CLASSES));

        Tensor forward(Tensor images) {
            return fc2.forward(relu(fc1.forward(images)));
        }
    }
}
