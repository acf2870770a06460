package dev.cohort.data;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.tcp.TcpBackend;
import dev.cohort.tcp.TcpOptions;
import dev.cohort.testkit.WorkerProcess;
import java.time.Duration;
import java.util.List;

/**
 * A rank of a training job that reads its share of {@code args[0]} with errors agreed on and
 * averages a "gradient" after each batch; prints {@code DATAERROR rank=R <message>} when the
 * loader throws, {@code DONE} when the epoch ends.
 */
public final class TrainingWorker {

    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            try (TcpBackend backend =
                    new TcpBackend(new TcpOptions().timeout(Duration.ofSeconds(60)), System.getenv())) {
                backend.initialize();
                ParquetDataset data = ParquetDataset.open(List.of(args[0]), ColumnMapping.list("features", "label"));
                try (ShardLoader loader =
                        data.loader(ErrorAgreementTest.agreeing(backend.group()), DataPosition.start(0))) {
                    while (loader.hasNext()) {
                        Batch batch = loader.next();
                        float[] gradient = {batch.features().get(0)};
                        backend.group()
                                .allreduce(DenseBuffer.of(gradient), ReduceOp.AVG)
                                .await();
                    }
                    System.out.println("DONE");
                } catch (DataException e) {
                    System.out.println("DATAERROR rank=" + e.rank() + " " + e.getMessage());
                }
            }
        });
    }
}
