package dev.cohort.runtime;

import dev.cohort.api.Topology;
import java.util.Map;

/**
 * Something on the class path that watches a job from its rank's process, found with
 * {@link java.util.ServiceLoader} when an engine has joined (a metrics endpoint, say). What it
 * starts, it stops when the returned handle is closed, as the backend closes.
 */
public interface JobObserver {

    /**
     * The rank {@code topology} describes has joined with {@code world}, its calls on record in
     * {@code world.flightRecorder()}; {@code env} is the job's environment.
     *
     * @return what to close when the backend closes
     * @throws IllegalArgumentException when {@code env} configures it wrongly (the backend then fails to initialize)
     */
    AutoCloseable joined(AbstractProcessGroup world, Topology topology, Map<String, String> env);
}
