package com.example;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.Trainer;
import ai.djl.training.dataset.ArrayDataset;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.tracker.Tracker;
import ai.djl.translate.TranslateException;
import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.djl.DistributedSampler;
import dev.cohort.djl.DistributedTrainer;
import dev.cohort.djl.DjlEngines;
import java.io.DataInputStream;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.zip.GZIPInputStream;

/** An MLP on Fashion-MNIST with DJL's PyTorch engine, on as many workers as {@code cohort run} starts. */
public final class TrainFashionMnist {

    static final String USAGE = "usage: TrainFashionMnist [--epochs N] [--batch-size N (all workers together)] "
            + "[--limit N (first N training images)] [--seed N] [--data DIR] [--save FILE (the trained parameters)]";

    public static void main(String[] args) throws IOException, TranslateException {
        int epochs = 1, batchSize = 64, limit = 60_000, seed = 7;
        Path data = Path.of("/usr/share/datasets/fashion-mnist");    // apt-get install dataset-fashion-mnist
        Path save = null;
        for (int i = 0; i < args.length; i += 2) {
            if (i + 1 == args.length) {
                throw new IllegalArgumentException("option " + args[i] + " needs a value; " + USAGE);
            }
            String value = args[i + 1];
            switch (args[i]) {
                case "--epochs" -> epochs = Integer.parseInt(value);
                case "--batch-size" -> batchSize = Integer.parseInt(value);
                case "--limit" -> limit = Integer.parseInt(value);
                case "--seed" -> seed = Integer.parseInt(value);
                case "--data" -> data = Path.of(value);
                case "--save" -> save = Path.of(value);
                default -> throw new IllegalArgumentException("unknown option " + args[i] + "; " + USAGE);
            }
        }
        // Cohort 1: the backend that COHORT_BACKEND names (cohort run --backend tcp sets it).
        try (DistributedBackend backend = Backends.select(null)) {
            backend.initialize();
            if (batchSize % backend.worldSize() != 0) {
                throw new IllegalArgumentException("--batch-size " + batchSize + " must be a multiple of the "
                        + backend.worldSize() + " workers");
            }
            int batchPerWorker = batchSize / backend.worldSize();
            Engine engine = DjlEngines.load("PyTorch");    // Engine.getEngine, one process at a time on a fresh host
            engine.setRandomSeed(seed);
            try (NDManager manager = engine.newBaseManager(); Model model = Model.newInstance("mlp", "PyTorch")) {
                float[] pixels = new float[limit * 784];
                byte[] bytes = read(data.resolve("train-images-idx3-ubyte.gz"), 16, limit * 784);
                for (int i = 0; i < pixels.length; i++) {
                    pixels[i] = (bytes[i] & 0xFF) / 255f;
                }
                float[] labels = new float[limit];
                bytes = read(data.resolve("train-labels-idx1-ubyte.gz"), 8, limit);
                for (int i = 0; i < limit; i++) {
                    labels[i] = bytes[i];
                }
                // Cohort 2: each worker reads its own shard, reshuffled every epoch from a seed all share.
                ArrayDataset dataset = new ArrayDataset.Builder()
                        .setData(manager.create(pixels, new Shape(limit, 784)))
                        .optLabels(manager.create(labels, new Shape(limit)))
                        .setSampling(new DistributedSampler(backend, batchPerWorker, true, seed)).build();
                model.setBlock(new SequentialBlock().add(Linear.builder().setUnits(128).build()).add(Activation::relu)
                        .add(Linear.builder().setUnits(10).build()));
                DefaultTrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                        .optOptimizer(Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.1f)).build());
                // Cohort 3: the trainer, where model.newTrainer(config) was.
                try (Trainer trainer = DistributedTrainer.of(backend, model, config)) {
                    trainer.initialize(new Shape(batchPerWorker, 784));
                    EasyTrain.fit(trainer, epochs, dataset, null);
                }
                if (backend.isRootWorker()) {
                    System.out.println("trained " + epochs + " epoch(s) of " + limit + " images on "
                            + backend.worldSize() + " worker(s) (" + backend.name() + ")");
                    if (save != null) {
                        List<String> values = new ArrayList<>();
                        for (Parameter p : model.getBlock().getParameters().values()) {
                            for (float v : p.getArray().toFloatArray()) {
                                values.add(Float.toString(v));
                            }
                        }
                        Files.write(save, values);
                    }
                }
            }
        }
    }

    /** The first {@code length} bytes after the header of a gzipped IDX file. */
    static byte[] read(Path file, int header, int length) throws IOException {
        try (DataInputStream in = new DataInputStream(new GZIPInputStream(Files.newInputStream(file)))) {
            in.skipNBytes(header);
            byte[] bytes = new byte[length];
            in.readFully(bytes);
            return bytes;
        }
    }
}
