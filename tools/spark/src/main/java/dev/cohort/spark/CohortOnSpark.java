package dev.cohort.spark;

import dev.cohort.runtime.auth.JobSecret;
import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.SparkContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.rdd.RDD;
import scala.reflect.ClassTag;
import scala.reflect.ClassTag$;

/**
 * Runs a Cohort training program on a Spark cluster as one barrier stage of {@code workers} tasks
 * (Spark's barrier execution mode: all tasks start together or none, and a failed task fails them
 * all). Each task starts one rank as a JVM of its own ({@link RankTask}), with Cohort's launch
 * environment: ranks from the partition ids, the host layout from the stage's task infos, and the
 * rendezvous at rank 0's host on a port its task chose and posted through the barrier. The ranks'
 * engine is chosen as under any launcher ({@code auto} unless the job's environment names one).
 *
 * <pre>{@code
 * JavaSparkContext sc = new JavaSparkContext(new SparkConf().setAppName("train"));
 * List<String> output = CohortOnSpark.run(sc, SparkJob.of(4, "com.example.Train", "--epochs", "5"));
 * }</pre>
 *
 * <p>The cluster must offer {@code workers} task slots at once (for instance 4 executors of one
 * core, {@code spark.executor.cores=1}, or cores per executor as the ranks' compute threads need
 * with {@code spark.task.cpus}). A failed stage is retried as Spark's settings say
 * ({@code spark.stage.maxConsecutiveAttempts}); each retry is a restart of the group
 * ({@code COHORT_RESTART_COUNT}), from which a program resumes its checkpoint. Each run gets a new
 * job secret ({@code COHORT_SECRET}) unless the job's environment gives one: it travels to the
 * executors with the stage's tasks, so turn on Spark's own authentication and encryption
 * ({@code spark.authenticate}, {@code spark.network.crypto.enabled}) where the network is shared.
 */
public final class CohortOnSpark {

    private CohortOnSpark() {}

    /**
     * Runs {@code job} and returns every rank's output, rank by rank, each line tagged
     * {@code [rank R]}; of a stage tried again after a failure, the output of the attempt that
     * succeeded.
     *
     * <p>When the stage fails for good, Spark's exception (a {@code SparkException}, unchecked from
     * Java) comes out of this call; its message names the rank, its exit code and its last lines.
     */
    public static List<String> run(JavaSparkContext sc, SparkJob job) {
        SparkContext context = sc.sc();
        String runId = ("spark-" + context.applicationId()).replaceAll("[^A-Za-z0-9._-]", "-");
        List<Integer> ranks = new ArrayList<>();
        for (int r = 0; r < job.workers(); r++) {
            ranks.add(r);
        }
        JavaRDD<Integer> slots = sc.parallelize(ranks, job.workers());
        ClassTag<RankTask.Output> outputs = ClassTag$.MODULE$.apply(RankTask.Output.class);
        // Every connection between the ranks proves a secret made for this run, unless the job names
        // one; it reaches the tasks inside the stage's closure, as protected as Spark's own RPC is.
        String secret = job.environment().containsKey(JobSecret.ENV)
                        || job.environment().containsKey(JobSecret.FILE_ENV)
                ? null
                : JobSecret.generate().text();
        RDD<RankTask.Output> ranksOutput = slots.rdd()
                .barrier()
                .mapPartitions(
                        new RankTask(job, runId.length() > 64 ? runId.substring(0, 64) : runId, secret),
                        false,
                        outputs);
        // The shuffle after the barrier stage makes it a shuffle-map stage, which Spark retries as a
        // whole when a task fails; a barrier result stage it would not retry.
        List<RankTask.Output> records = new ArrayList<>(
                JavaRDD.fromRDD(ranksOutput, outputs).repartition(1).collect());
        records.sort(Comparator.comparingInt(RankTask.Output::rank));
        List<String> lines = new ArrayList<>();
        records.forEach(r -> lines.addAll(r.lines()));
        return lines;
    }
}
