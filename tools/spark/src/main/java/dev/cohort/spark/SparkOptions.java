package dev.cohort.spark;

import org.apache.spark.SparkConf;
import picocli.CommandLine.Option;

/**
 * What every command line that runs Cohort on Spark takes (a picocli mixin): how many ranks, and
 * Spark's master when the program is started with plain {@code java} rather than spark-submit.
 */
public final class SparkOptions {

    @Option(names = "--workers", paramLabel = "N", required = true, description = "Ranks: one Spark task each.")
    int workers;

    @Option(
            names = "--master",
            paramLabel = "URL",
            description = "Spark's master (spark-submit's --master when not given).")
    String master;

    /** The number of ranks. */
    public int workers() {
        return workers;
    }

    /** Spark's configuration for an application named {@code appName}, with the master when one was given. */
    public SparkConf conf(String appName) {
        SparkConf conf = new SparkConf().setAppName(appName);
        if (master != null) {
            conf.setMaster(master);
        }
        return conf;
    }

    /** Where the application runs, for messages: the master given, or spark-submit's. */
    public String describeMaster() {
        return master != null ? master : "spark-submit's master";
    }
}
