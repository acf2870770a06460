package dev.cohort.spark;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.examples.FashionMnistTrainer;
import dev.cohort.testkit.FashionMnistFiles;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Spark standalone cluster ({@link StandaloneCluster}: a master and two workers of one core,
 * so the two executors are two more JVMs). The driver (this JVM) runs the 2-rank Fashion-MNIST
 * training as a barrier stage across them.
 */
@Timeout(value = 420, unit = TimeUnit.SECONDS)
class StandaloneClusterTest {

    @TempDir
    Path dir;

    @Test
    void trainsAcrossTwoExecutorsOfAStandaloneCluster() throws Exception {
        FashionMnistFiles.installed();
        try (StandaloneCluster cluster = StandaloneCluster.start(dir, 2)) {
            JavaSparkContext sc = new JavaSparkContext(cluster.conf("cohort-standalone-test"));
            List<String> output;
            try {
                output = CohortOnSpark.run(
                        sc,
                        SparkJob.of(
                                2,
                                FashionMnistTrainer.class.getName(),
                                "--epochs",
                                "1",
                                "--max-steps",
                                "100",
                                "--threads",
                                "1"));
            } finally {
                sc.stop();
            }
            String all = String.join("\n", output);
            assertThat(all).contains("[rank 0] training mlp on 2 worker(s)", "launched by a Spark barrier stage");
            Matcher m = Pattern.compile("test accuracy ([0-9.]+), final loss").matcher(all);
            assertThat(m.find()).as("a summary line in:\n%s", all).isTrue();
            assertThat(Double.parseDouble(m.group(1))).isGreaterThan(0.7);
            // Two executors of one core each: the ranks ran in two executor JVMs' tasks.
            assertThat(cluster.executors()).isEqualTo(2);
        }
    }
}
