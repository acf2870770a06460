package dev.cohort.launcher.control;

import java.util.function.Consumer;

/** The referee in-process, for a single node. */
public final class LocalCoordinator implements Coordinator {

    private final Referee referee;
    private Consumer<Command> commands;

    public LocalCoordinator(int maxRestarts) {
        this.referee = new Referee(1, maxRestarts);
    }

    @Override
    public synchronized void open(Consumer<Command> commands) {
        this.commands = commands;
        commands.accept(referee.begin());
    }

    @Override
    public synchronized void report(Report report) {
        referee.onReport(report).forEach(commands);
    }

    @Override
    public void close() {
    }
}
