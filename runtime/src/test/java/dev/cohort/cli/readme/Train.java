package dev.cohort.cli.readme;

import dev.cohort.api.DistributedBackend;
import dev.cohort.cli.BackendChoice;
import dev.cohort.cli.BackendOptions;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;

@Command(name = "train") public class Train implements Runnable {
    @Option(names = "--batch-size") int batchSize = 64;
    BackendChoice distributed;
    public void run() {
        DistributedBackend backend = distributed.backend();
        backend.initialize();
        backend.checkBatchSize(batchSize * backend.worldSize());
        double loss = backend.averageAll(0.5 * (backend.rank() + 1));
        if (backend.isRootWorker()) System.out.printf("%d workers, mean loss %.3f%n", backend.worldSize(), loss);
    }
    public static void main(String[] args) {
        Train train = new Train(); CommandLine cli = new CommandLine(train);
        train.distributed = BackendOptions.add(cli);
        System.exit(cli.execute(args));
    }
}
