package dev.cohort.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.examples.FashionMnistTrainer;
import dev.cohort.testkit.FashionMnistFiles;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Fashion-MNIST trainer, unchanged, as a barrier stage of a real Spark (4.2, {@code local[2]}:
 * the driver and two task slots in this JVM, each task starting its rank's JVM).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class CohortOnSparkTest {

    private static JavaSparkContext sc;

    @TempDir
    Path dir;

    @BeforeAll
    static void spark() {
        FashionMnistFiles.installed();
        // local[2,2]: two slots, and a failed stage is tried once more.
        sc = new JavaSparkContext(new SparkConf()
                .setMaster("local[2,2]")
                .setAppName("cohort-on-spark-test")
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.stage.maxConsecutiveAttempts", "2"));
    }

    @AfterAll
    static void stop() {
        if (sc != null) {
            sc.stop();
        }
    }

    private static SparkJob trainer(String... extra) {
        List<String> args = new java.util.ArrayList<>(List.of("--epochs", "1", "--max-steps", "60", "--threads", "1"));
        args.addAll(List.of(extra));
        return SparkJob.of(2, FashionMnistTrainer.class.getName(), args.toArray(String[]::new));
    }

    private static void assertTrainedTogether(List<String> output) {
        String all = String.join("\n", output);
        assertThat(all).contains("[rank 0] training mlp on 2 worker(s)", "launched by a Spark barrier stage");
        Matcher m = Pattern.compile("test accuracy ([0-9.]+), final loss").matcher(all);
        assertThat(m.find()).as("a summary line in:\n%s", all).isTrue();
        assertThat(Double.parseDouble(m.group(1))).isGreaterThan(0.6);
    }

    /** Two ranks train as one barrier stage; when one dies the stage fails and Spark's retry resumes. */
    @Test
    void aFailedRankFailsTheStageAndItsRetryResumesFromTheCheckpoint() {
        SparkJob job = trainer(
                        "--checkpoint-dir", dir.resolve("ckpt").toString(), "--checkpoint-every", "20", "--resume")
                .withEnvironment("COHORT_FAULT_AT_STEP", "30");
        List<String> output = CohortOnSpark.run(sc, job);
        assertTrainedTogether(output);
        // Every line tagged with its rank (rank 1 of the trainer prints nothing of its own).
        assertThat(output).allMatch(l -> l.matches("\\[rank [01]\\] .*"));
        assertThat(String.join("\n", output)).contains("restarts 1, resumed from step 20");
    }

    @Test
    void aRankThatFailsForGoodFailsTheJobNamingItsRankAndLastLines() {
        SparkJob job = trainer("--data-dir", dir.resolve("no-such-data").toString());
        assertThatThrownBy(() -> CohortOnSpark.run(sc, job))
                .hasMessageContaining("cohort on spark: rank")
                .hasMessageContaining("exited with code")
                .hasMessageContaining("no-such-data");
    }

    @Test
    void everyRankGetsTheSecretTheDriverMadeForTheRunANewOneEachRun() {
        List<String> first = secrets(CohortOnSpark.run(sc, SparkJob.of(2, SecretProbe.class.getName())));
        List<String> second = secrets(CohortOnSpark.run(sc, SparkJob.of(2, SecretProbe.class.getName())));
        assertThat(first).hasSize(2).doesNotContain("none");
        assertThat(first.get(0)).isEqualTo(first.get(1));
        assertThat(second.get(0)).isEqualTo(second.get(1)).isNotEqualTo(first.get(0));
        List<String> given = secrets(CohortOnSpark.run(
                sc,
                SparkJob.of(2, SecretProbe.class.getName())
                        .withEnvironment("COHORT_SECRET", "a secret the job chose itself")));
        assertThat(given).hasSize(2).containsOnly(given.get(0));
        assertThat(given.get(0)).isNotEqualTo(first.get(0));
    }

    /** Each rank's "SECRET digest" line's digest, rank by rank. */
    private static List<String> secrets(List<String> output) {
        return output.stream()
                .filter(l -> l.contains("SECRET "))
                .map(l -> l.substring(l.indexOf("SECRET ") + 7))
                .toList();
    }

    @Test
    void layoutFollowsTheTasksHosts() {
        assertThat(RankTask.layout(List.of("a", "b", "a", "b"), 2))
                .isEqualTo(vars("RANK=2 WORLD_SIZE=4 LOCAL_RANK=1 LOCAL_WORLD_SIZE=2 GROUP_RANK=0 GROUP_WORLD_SIZE=2"));
        assertThat(RankTask.layout(List.of("a", "b"), 1))
                .containsEntry("LOCAL_WORLD_SIZE", "1")
                .containsEntry("GROUP_RANK", "1");
        assertThat(RankTask.hostOf("10.0.0.7:41234")).isEqualTo("10.0.0.7");
        assertThatThrownBy(() -> SparkJob.of(0, "x")).hasMessageContaining("workers must be >= 1");
    }

    /** {@code "K=V K=V ..."} as a map: launcher variables written compactly. */
    private static Map<String, String> vars(String spec) {
        return java.util.Arrays.stream(spec.split(" "))
                .map(kv -> kv.split("=", 2))
                .collect(java.util.stream.Collectors.toMap(kv -> kv[0], kv -> kv[1]));
    }
}
