package dev.cohort.spark.ml;

import java.time.Duration;
import org.apache.spark.SparkContext;

/**
 * Whether the cluster can run a barrier stage of so many tasks at once. Spark itself finds out only
 * after the stage is submitted, and then retries for minutes before it gives up; {@code fit} asks
 * first, as the barrier scheduler does: the tasks the executors now registered can run at once.
 */
final class TaskSlots {

    private TaskSlots() {}

    /** The task slots the cluster offers now (executors' cores over {@code spark.task.cpus}). */
    static int now(SparkContext sc) {
        return sc.maxNumConcurrentTasks(sc.resourceProfileManager().defaultResourceProfile());
    }

    /**
     * Waits up to {@code wait} for {@code workers} task slots (executors still registering).
     *
     * @throws IllegalArgumentException when there are fewer then, saying how many
     */
    static void await(SparkContext sc, int workers, Duration wait) {
        long deadline = System.nanoTime() + wait.toNanos();
        int slots = now(sc);
        while (slots < workers && System.nanoTime() < deadline) {
            try {
                Thread.sleep(200);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new IllegalStateException("interrupted while waiting for task slots", e);
            }
            slots = now(sc);
        }
        if (slots < workers) {
            throw new IllegalArgumentException("the cluster offers " + slots + " task slot(s) at once (master "
                    + sc.master() + ", spark.task.cpus " + sc.getConf().get("spark.task.cpus", "1")
                    + "), fewer than the "
                    + workers + " workers, which must all run at once: set numWorkers to at most " + slots
                    + " or add executors or cores");
        }
    }
}
