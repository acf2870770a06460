package dev.cohort.metrics;

import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.JobObserver;
import java.util.Map;

/**
 * Serves rank 0's meters as Prometheus text at {@code http://HOST:PORT/metrics} where
 * {@value #ENV_PORT} names the port ({@code cohort run --metrics-port PORT} sets it): its
 * collectives ({@link CollectiveMeters}), its training steps ({@link StepMeters}) and its JVM (memory, GC, threads, CPU). Started when
 * rank 0's engine joins, stopped when its backend closes; its threads never keep a JVM alive.
 * Without the variable it touches no Micrometer class.
 */
public final class PrometheusEndpoint implements JobObserver {

    /** The port rank 0 serves its metrics on; unset: none. */
    public static final String ENV_PORT = "COHORT_METRICS_PORT";

    @Override
    public AutoCloseable joined(AbstractProcessGroup world, Topology topology, Map<String, String> env) {
        String named = env.get(ENV_PORT);
        if (named == null || named.isBlank() || topology.rank() != 0) {
            return () -> {};
        }
        return PrometheusServer.start(port(named), world, topology, LaunchEnvironment.parseRestartCount(env));
    }

    static int port(String named) {
        try {
            int port = Integer.parseInt(named.trim());
            if (port >= 1 && port <= 65535) {
                return port;
            }
        } catch (NumberFormatException e) {
            // said below
        }
        throw new IllegalArgumentException(ENV_PORT + " must be a port from 1 to 65535, got '" + named + "'");
    }
}
