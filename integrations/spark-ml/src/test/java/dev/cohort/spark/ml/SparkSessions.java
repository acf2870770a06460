package dev.cohort.spark.ml;

import org.apache.spark.sql.SparkSession;

/** The tests' Spark: {@code local[2,2]} (two task slots in this JVM; a failed stage is tried once more). */
final class SparkSessions {

    private SparkSessions() {}

    static SparkSession local() {
        return SparkSession.builder()
                .master("local[2,2]")
                .appName("cohort-spark-ml-test")
                .config("spark.ui.enabled", "false")
                .config("spark.driver.host", "127.0.0.1")
                .config("spark.stage.maxConsecutiveAttempts", "2")
                .config("spark.sql.shuffle.partitions", "2")
                .getOrCreate();
    }
}
