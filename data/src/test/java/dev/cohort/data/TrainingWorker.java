package dev.cohort.data;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ProcessGroup;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.tcp.TcpBackend;
import dev.cohort.tcp.TcpOptions;
import dev.cohort.testkit.WorkerProcess;
import java.time.Duration;
import java.util.Arrays;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.stream.Collectors;

/**
 * A rank of a training job that reads its share of {@code args[0]} ({@link Shards} examples) with
 * errors agreed on, for {@code args[1]} epochs (default 1), with the Hadoop settings
 * {@code key=value} that follow, and averages a "gradient" after each batch: the sum of the batch's
 * example ids. Prints {@code EPOCH e IDS i,j,...} (the ids it saw) after each epoch, then
 * {@code DONE AVERAGED x} (the sum of the averages); {@code DATAERROR rank=R <message>} when the
 * loader throws.
 */
public final class TrainingWorker {

    public static void main(String[] args) {
        int epochs = args.length > 1 ? Integer.parseInt(args[1]) : 1;
        Map<String, String> hadoopConf = new HashMap<>();
        for (String setting : Arrays.asList(args).subList(Math.min(2, args.length), args.length)) {
            String[] keyValue = setting.split("=", 2);
            hadoopConf.put(keyValue[0], keyValue[1]);
        }
        WorkerProcess.main(() -> {
            try (TcpBackend backend =
                    new TcpBackend(new TcpOptions().timeout(Duration.ofSeconds(60)), System.getenv())) {
                backend.initialize();
                ProcessGroup group = backend.group();
                ParquetDataset data =
                        ParquetDataset.open(List.of(args[0]), ColumnMapping.list("features", "label"), hadoopConf);
                double averaged = 0;
                for (int epoch = 0; epoch < epochs; epoch++) {
                    StringBuilder ids = new StringBuilder();
                    try (ShardLoader loader =
                            data.loader(ErrorAgreementTest.agreeing(group), DataPosition.start(epoch))) {
                        while (loader.hasNext()) {
                            int[] labels = Shards.labelsChecked(loader.next());
                            float[] gradient = {Arrays.stream(labels).sum()};
                            group.allreduce(DenseBuffer.of(gradient), ReduceOp.AVG)
                                    .await();
                            averaged += gradient[0];
                            ids.append(ids.isEmpty() ? "" : ",")
                                    .append(Arrays.stream(labels)
                                            .mapToObj(Integer::toString)
                                            .collect(Collectors.joining(",")));
                        }
                    } catch (DataException e) {
                        System.out.println("DATAERROR rank=" + e.rank() + " " + e.getMessage());
                        return;
                    }
                    System.out.println("EPOCH " + epoch + " IDS " + ids);
                }
                System.out.println("DONE AVERAGED " + averaged);
            }
        });
    }
}
