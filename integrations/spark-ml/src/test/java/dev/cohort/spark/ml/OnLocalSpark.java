package dev.cohort.spark.ml;

import dev.cohort.testkit.FashionMnistFiles;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import picocli.CommandLine;

/**
 * A test class's Spark: {@code local[2,2]} (two task slots in this JVM; a failed stage is tried
 * once more), started before its tests and stopped after them.
 */
abstract class OnLocalSpark {

    static SparkSession spark;

    /**
     * The demo ({@code ./cohort demo --spark}) for one epoch on two workers of this Spark, batch
     * 32, with {@code options} added to its command line; its files and summary go to {@code dir}.
     * Skips the test where Fashion-MNIST is not installed.
     */
    static FashionMnistDemo.Outcome demoOneEpochOnTwoWorkers(Path dir, String... options) {
        Path data = FashionMnistFiles.installed();
        List<String> args = new ArrayList<>(List.of(
                "--master", "local[2,2]",
                "--workers", "2",
                "--epochs", "1",
                "--batch-size", "32",
                "--data-dir", data.toString(),
                "--json", dir.resolve("summary.json").toString()));
        args.addAll(List.of(options));
        FashionMnistDemo demo = new FashionMnistDemo();
        new CommandLine(demo).parseArgs(args.toArray(String[]::new));
        return demo.run(spark, dir);
    }

    @BeforeAll
    static void startSpark() {
        spark = SparkSession.builder()
                .master("local[2,2]")
                .appName("cohort-spark-ml-test")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.stage.maxConsecutiveAttempts", "2")
                .config("spark.sql.shuffle.partitions", "2")
                .getOrCreate();
    }

    @AfterAll
    static void stopSpark() {
        if (spark != null) {
            spark.stop();
            spark = null;
        }
    }
}
