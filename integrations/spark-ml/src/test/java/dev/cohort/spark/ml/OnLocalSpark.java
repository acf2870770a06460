package dev.cohort.spark.ml;

import org.apache.spark.sql.SparkSession;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;

/**
 * A test class's Spark: {@code local[2,2]} (two task slots in this JVM; a failed stage is tried
 * once more), started before its tests and stopped after them.
 */
abstract class OnLocalSpark {

    static SparkSession spark;

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
