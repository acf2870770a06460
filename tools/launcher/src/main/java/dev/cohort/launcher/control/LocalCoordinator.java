package dev.cohort.launcher.control;

import dev.cohort.runtime.auth.JobSecret;
import java.util.List;
import java.util.Optional;
import java.util.function.Consumer;

/** The referee in-process, for a single node; an elastic run's generation store on loopback. */
public final class LocalCoordinator implements Coordinator {

    private final Referee referee;
    private final int workers;
    private final String masterAddr;
    private final Generations generations;
    private Consumer<Command> commands;

    /** A single node of {@code workers} workers, elastic when {@code elastic} is positive, its rank 0s on {@code masterAddr}. */
    public LocalCoordinator(int maxRestarts, int workers, int elastic, String masterAddr, Optional<JobSecret> secret) {
        this.referee = new Referee(1, maxRestarts, elastic);
        this.workers = workers;
        this.masterAddr = masterAddr;
        this.generations = elastic > 0 ? Generations.open("127.0.0.1", secret) : null;
    }

    @Override
    public synchronized void open(Consumer<Command> commands) {
        this.commands = commands;
        commands.accept(referee.begin(List.of(workers)));
    }

    @Override
    public synchronized void report(Report report) {
        for (Command c : referee.onReport(report)) {
            if (c instanceof Command.Regroup g) {
                generations.publish(g, node -> masterAddr);
            }
            commands.accept(c);
        }
    }

    @Override
    public String elasticStore() {
        return generations == null ? "" : generations.address();
    }

    @Override
    public void close() {
        if (generations != null) {
            generations.close();
        }
    }
}
