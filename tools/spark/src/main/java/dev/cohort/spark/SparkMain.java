package dev.cohort.spark;

import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.Callable;
import org.apache.spark.api.java.JavaSparkContext;
import picocli.CommandLine;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * A Cohort program on Spark from the command line, the way Spark jobs are started:
 *
 * <pre>
 * spark-submit --class dev.cohort.spark.SparkMain --jars APP.jar cohort-spark.jar \
 *     --workers 4 com.example.Train --epochs 5
 * </pre>
 *
 * <p>The master comes from spark-submit ({@code --master}), or {@code --master} here when started
 * with plain {@code java}. Every rank's output is printed in rank order when the stage ends (with a
 * local master, as it comes); the
 * exit code is 0 when every rank succeeded, 1 when the stage failed for good (the message names
 * the rank), 2 for bad arguments. Without a log4j2 configuration of the user's, Spark logs only
 * warnings and errors.
 */
@Command(
        name = "cohort-spark",
        mixinStandardHelpOptions = true,
        description = "Runs a Cohort training program as one barrier stage of a Spark job.")
public final class SparkMain implements Callable<Integer> {

    @Spec
    CommandSpec spec;

    @Mixin
    SparkOptions spark = new SparkOptions();

    @Option(
            names = "--timeout-minutes",
            paramLabel = "M",
            defaultValue = "1440",
            description = "A rank running longer is killed and fails the stage (default: ${DEFAULT-VALUE}).")
    long timeoutMinutes;

    @Option(names = "--env", paramLabel = "NAME=VALUE", description = "A variable for every rank (repeatable).")
    List<String> env = new ArrayList<>();

    @Option(names = "--jvm-option", paramLabel = "OPTION", description = "An option for every rank's JVM (repeatable).")
    List<String> jvmOptions = new ArrayList<>();

    @Parameters(index = "0", paramLabel = "MAIN_CLASS", description = "The program's main class.")
    String mainClass;

    @Parameters(index = "1..*", paramLabel = "ARGS", description = "Its arguments.")
    List<String> args = new ArrayList<>();

    public static void main(String[] argv) {
        if (System.getProperty("log4j2.configurationFile") == null
                && SparkMain.class.getClassLoader().getResource("log4j2.properties") == null) {
            System.setProperty("log4j2.configurationFile", "cohort-spark-log4j2.properties");
        }
        System.exit(new CommandLine(new SparkMain()).execute(argv));
    }

    @Override
    public Integer call() {
        if (spark.workers() < 1 || timeoutMinutes < 1) {
            throw new CommandLine.ParameterException(
                    spec.commandLine(), "--workers and --timeout-minutes must be >= 1");
        }
        SparkJob job = new SparkJob(
                spark.workers(),
                mainClass,
                args,
                jvmOptions,
                java.util.Map.of(),
                Duration.ofMinutes(timeoutMinutes),
                true);
        for (String e : env) {
            int eq = e.indexOf('=');
            if (eq < 1) {
                throw new CommandLine.ParameterException(spec.commandLine(), "--env wants NAME=VALUE, got '" + e + "'");
            }
            job = job.withEnvironment(e.substring(0, eq), e.substring(eq + 1));
        }
        try (JavaSparkContext sc = new JavaSparkContext(spark.conf("cohort: " + mainClass))) {
            List<String> output = CohortOnSpark.run(sc, job);
            if (!sc.isLocal()) {
                // A local master's tasks printed each line here as it came.
                output.forEach(System.out::println);
            }
            return 0;
        } catch (RuntimeException e) {
            System.err.println("cohort-spark: " + e.getMessage());
            return 1;
        }
    }
}
