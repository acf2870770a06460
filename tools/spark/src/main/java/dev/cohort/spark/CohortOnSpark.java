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
        List<Integer> ranks = new ArrayList<>();
        for (int r = 0; r < job.workers(); r++) {
            ranks.add(r);
        }
        List<String> lines = new ArrayList<>();
        run(sc.parallelize(ranks, job.workers()), job, null).forEach(r -> lines.addAll(r.lines()));
        return lines;
    }

    /**
     * Runs {@code job} with one rank per partition of {@code partitions}, which must have
     * {@code job.workers()} partitions: each task writes its partition to its rank's standard input
     * through {@code feed} (null: none), and the rank reads it to its end. Returns what each rank
     * left, rank by rank: its output and the file it wrote at {@code $COHORT_SPARK_RESULT} (a rank
     * also gets {@code $COHORT_SPARK_WORK}, a directory of its own removed when it ends). Of a
     * stage tried again after a failure, the results of the attempt that succeeded; the partitions
     * are computed again for it.
     *
     * @throws IllegalArgumentException when the partitions are not one per worker
     */
    public static <T> List<RankResult> run(JavaRDD<T> partitions, SparkJob job, RankFeed<T> feed) {
        if (partitions.getNumPartitions() != job.workers()) {
            throw new IllegalArgumentException("cohort on spark: " + partitions.getNumPartitions() + " partitions for "
                    + job.workers() + " workers: repartition to one per worker");
        }
        SparkContext context = partitions.context();
        String runId = ("spark-" + context.applicationId()).replaceAll("[^A-Za-z0-9._-]", "-");
        ClassTag<RankResult> results = ClassTag$.MODULE$.apply(RankResult.class);
        // Every connection between the ranks proves a secret made for this run, unless the job names
        // one; it reaches the tasks inside the stage's closure, as protected as Spark's own RPC is.
        String secret = job.environment().containsKey(JobSecret.ENV)
                        || job.environment().containsKey(JobSecret.FILE_ENV)
                ? null
                : JobSecret.generate().text();
        RDD<RankResult> ranksOutput = partitions
                .rdd()
                .barrier()
                .mapPartitions(
                        new RankTask<>(job, runId.length() > 64 ? runId.substring(0, 64) : runId, secret, feed),
                        false,
                        results);
        // The shuffle after the barrier stage makes it a shuffle-map stage, which Spark retries as a
        // whole when a task fails; a barrier result stage it would not retry.
        List<RankResult> records = new ArrayList<>(
                JavaRDD.fromRDD(ranksOutput, results).repartition(1).collect());
        records.sort(Comparator.comparingInt(RankResult::rank));
        return records;
    }
}
