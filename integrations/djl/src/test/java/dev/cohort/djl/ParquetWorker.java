package dev.cohort.djl;

import ai.djl.Model;
import ai.djl.engine.Engine;
import ai.djl.ndarray.NDArray;
import ai.djl.ndarray.NDList;
import ai.djl.ndarray.NDManager;
import ai.djl.ndarray.types.Shape;
import ai.djl.nn.Activation;
import ai.djl.nn.Parameter;
import ai.djl.nn.SequentialBlock;
import ai.djl.nn.core.Linear;
import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.EasyTrain;
import ai.djl.training.dataset.Batch;
import ai.djl.training.loss.Loss;
import ai.djl.training.optimizer.Optimizer;
import ai.djl.training.optimizer.Sgd;
import ai.djl.training.tracker.Tracker;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.checkpoint.TrainingPosition;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.LoaderOptions;
import dev.cohort.data.ParquetDataset;
import dev.cohort.tcp.TcpBackend;
import dev.cohort.tcp.TcpOptions;
import dev.cohort.testkit.WorkerProcess;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * One rank of a DJL job on the tcp engine training an MLP ({@code WIDTH}-{@code hidden}-10, SGD) from
 * the Parquet shards in {@code DIR} through a {@link DistributedParquetDataset}. Args: {@code MODE DIR
 * OUT [KEY=VALUE...]}; every rank writes its parameters, in block order, one per line, to
 * {@code OUT-RANK.params}. Modes: {@code fit} ({@code EasyTrain.fit}; prints the mean loss and
 * accuracy over the whole dataset before and after, as {@code BEFORE loss=L accuracy=A} and
 * {@code AFTER ...}), {@code loop} (a hand-written loop that writes each batch, as its labels and
 * each row's first feature, to {@code OUT-RANK.batches}, one line per batch). Options:
 * {@code batch=N} per rank (8), {@code epochs=E} (1), {@code hidden=H} (32), {@code momentum=true},
 * {@code save=STEP:FILE} (loop: the root checkpoints after that step, with the data position),
 * {@code resume=FILE} (loop: every rank loads it, the dataset with it).
 */
public final class ParquetWorker {

    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            String mode = args[0];
            Map<String, String> options = new HashMap<>();
            for (int i = 3; i < args.length; i++) {
                options.put(args[i].substring(0, args[i].indexOf('=')), args[i].substring(args[i].indexOf('=') + 1));
            }
            int batch = Integer.parseInt(options.getOrDefault("batch", "8"));
            int epochs = Integer.parseInt(options.getOrDefault("epochs", "1"));
            int hidden = Integer.parseInt(options.getOrDefault("hidden", "32"));
            Engine engine = DjlEngines.load("PyTorch"); // before any other DJL call: see DjlEngines
            ParquetDataset parquet = ParquetDataset.open(List.of(args[1]), ColumnMapping.list("features", "label"));
            try (DistributedBackend backend = new TcpBackend(new TcpOptions(), System.getenv());
                    Model model = Model.newInstance("mlp");
                    DistributedParquetDataset data = DistributedParquetDataset.of(
                            parquet,
                            new LoaderOptions()
                                    .batchSize(batch)
                                    .seed(5)
                                    .shuffleBuffer(30)
                                    .readers(2))) {
                backend.initialize();
                engine.setRandomSeed(1000 + 17 * backend.rank());
                model.setBlock(new SequentialBlock()
                        .add(Linear.builder().setUnits(hidden).build())
                        .add(Activation::relu)
                        .add(Linear.builder().setUnits(10).build()));
                Sgd.Builder sgd = Optimizer.sgd().setLearningRateTracker(Tracker.fixed(0.1f));
                if (Boolean.parseBoolean(options.get("momentum"))) {
                    sgd.optMomentum(0.9f);
                }
                DefaultTrainingConfig config =
                        new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss()).optOptimizer(sgd.build());
                String out = args[2] + "-" + backend.rank();
                try (DistributedTrainer trainer = DistributedTrainer.of(backend, model, config)) {
                    trainer.initialize(new Shape(batch, parquet.width()));
                    if (mode.equals("fit")) {
                        DistributedParquetDataset all = DistributedParquetDataset.of(
                                parquet, new LoaderOptions().batchSize(500).shuffleBuffer(0));
                        System.out.println("BEFORE " + evaluate(trainer, all));
                        EasyTrain.fit(trainer, epochs, data, null);
                        System.out.println("AFTER " + evaluate(trainer, all));
                    } else {
                        loop(trainer, data, epochs, options, Path.of(out + ".batches"));
                    }
                    List<String> lines = new ArrayList<>();
                    for (Parameter p : model.getBlock().getParameters().values()) {
                        for (float v : p.getArray().toFloatArray()) {
                            lines.add(Float.toString(v));
                        }
                    }
                    Files.write(Path.of(out + ".params"), lines);
                }
                System.out.println("OK rank " + backend.rank());
            }
        });
    }

    /** The mean loss and accuracy of the model over every rank's share of {@code all}, averaged over the ranks. */
    private static String evaluate(DistributedTrainer trainer, DistributedParquetDataset all) throws Exception {
        double loss = 0;
        long correct = 0;
        long rows = 0;
        int batches = 0;
        for (Batch b : trainer.iterateDataset(all)) {
            NDArray pred = trainer.evaluate(b.getData()).singletonOrThrow();
            NDArray labels = b.getLabels().singletonOrThrow();
            loss += trainer.getLoss().evaluate(b.getLabels(), new NDList(pred)).getFloat();
            correct += pred.argMax(1).eq(labels).countNonzero().getLong();
            rows += b.getSize();
            batches++;
            b.close();
        }
        try (NDManager manager = NDManager.newBaseManager()) {
            float[] mean = DistributedArrays.averageAll(
                            trainer.backend(),
                            manager.create(new float[] {(float) (loss / batches), (float) correct / rows}))
                    .toFloatArray();
            return "loss=" + mean[0] + " accuracy=" + mean[1];
        }
    }

    /** The hand-written loop with the checkpoint options; each batch logged to {@code log}. */
    private static void loop(
            DistributedTrainer trainer,
            DistributedParquetDataset data,
            int epochs,
            Map<String, String> options,
            Path log)
            throws Exception {
        TrainingPosition position = TrainingPosition.start();
        if (options.containsKey("resume")) {
            position = Checkpoints.load(Path.of(options.get("resume")), trainer, data);
            System.out.println("RESUMED AT " + position + ", data " + data.position());
        }
        DjlWorker.SaveAt save = DjlWorker.SaveAt.of(options);
        List<String> lines = new ArrayList<>();
        long step = position.step();
        int batch = position.batchInEpoch();
        for (int epoch = position.epoch(); epoch < epochs; epoch++, batch = 0) {
            for (Batch b : trainer.iterateDataset(data)) {
                DjlWorker.trainStep(trainer, b);
                lines.add(Arrays.toString(b.getLabels().head().toLongArray()) + " "
                        + Arrays.toString(b.getData().head().get(":, 0").toFloatArray()));
                b.close();
                step++;
                batch++;
                if (step == save.step() && trainer.backend().isRootWorker()) {
                    boolean epochDone = data.position().epoch() > epoch;
                    Checkpoints.save(
                            save.file(),
                            trainer,
                            epochDone
                                    ? new TrainingPosition(epoch + 1, 0, step)
                                    : new TrainingPosition(epoch, batch, step),
                            data);
                }
            }
        }
        Files.write(log, lines);
    }
}
