package dev.cohort.launcher.control;

import java.io.IOException;
import java.util.function.Consumer;

/**
 * A node launcher's link to the referee: in-process on a single node, a TCP control channel to
 * node 0 across nodes. Commands arrive on {@code commands} from any thread; a lost link arrives
 * as {@link Command.Exit} with a message that says so.
 */
public interface Coordinator extends AutoCloseable {

    /** Joins the group; the first command (normally Start 0) follows on {@code commands}. */
    void open(Consumer<Command> commands) throws IOException;

    void report(Report report);

    /** Where an elastic run's generation store listens ({@code host:port}), once joined; empty when not elastic. */
    String elasticStore();

    @Override
    void close();
}
