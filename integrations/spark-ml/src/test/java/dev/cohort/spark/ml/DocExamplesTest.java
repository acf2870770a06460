package dev.cohort.spark.ml;

import static org.assertj.core.api.Assertions.assertThat;

import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.apache.spark.ml.PipelineModel;
import org.apache.spark.ml.evaluation.MulticlassClassificationEvaluator;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The Java and the Scala program of docs/CLUSTERS.md's Spark ML section, taken from the page as
 * it stands, compiled (javac; scalac 2.13, Spark's Scala) and run on this JVM's local Spark: each
 * fits its pipeline on numeric columns, saves it, and its saved model scores the test rows.
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class DocExamplesTest extends OnLocalSpark {

    private static final Path PAGE = Path.of("../../docs/CLUSTERS.md");

    @TempDir
    Path dir;

    private String train;
    private String test;

    @BeforeEach
    void writeData() {
        train = dir.resolve("train.parquet").toString();
        test = dir.resolve("test.parquet").toString();
        PipelineTest.blobs(spark, 1200, 11).write().parquet(train);
        PipelineTest.blobs(spark, 300, 12).write().parquet(test);
    }

    @Test
    void theJavaProgramFitsSavesAndItsModelScores() throws Exception {
        Path source = dir.resolve("src/FitOnSpark.java");
        Files.createDirectories(source.getParent());
        Files.writeString(source, block("java", "public class FitOnSpark"));
        Path classes = Files.createDirectories(dir.resolve("java-classes"));
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        int code = javac.run(
                null,
                null,
                null,
                "-classpath",
                System.getProperty("java.class.path"),
                "-d",
                classes.toString(),
                source.toString());
        assertThat(code).as("javac of the page's Java program").isZero();

        String model = dir.resolve("java-model").toString();
        run(classes, "FitOnSpark", train, model, test);
        assertThat(accuracy(model)).isGreaterThan(0.9);
    }

    @Test
    void theScalaProgramFitsSavesAndItsModelScores() throws Exception {
        Path source = dir.resolve("src/FitOnSparkScala.scala");
        Files.createDirectories(source.getParent());
        Files.writeString(source, block("scala", "object FitOnSparkScala"));
        Path classes = Files.createDirectories(dir.resolve("scala-classes"));
        boolean compiled =
                scala.tools.nsc.Main.process(new String[] {"-usejavacp", "-d", classes.toString(), source.toString()});
        assertThat(compiled).as("scalac of the page's Scala program").isTrue();

        String model = dir.resolve("scala-model").toString();
        run(classes, "FitOnSparkScala", train, model, test);
        assertThat(accuracy(model)).isGreaterThan(0.9);
    }

    /** The page's fenced {@code language} block that holds {@code marker}. */
    private static String block(String language, String marker) throws Exception {
        Matcher m = Pattern.compile("```" + language + "\\n(.*?)```", Pattern.DOTALL)
                .matcher(Files.readString(PAGE));
        while (m.find()) {
            if (m.group(1).contains(marker)) {
                return m.group(1);
            }
        }
        throw new AssertionError(PAGE + " has no " + language + " block with " + marker);
    }

    /** Runs {@code main} of the compiled program, to its end. */
    private static void run(Path classes, String main, String... args) throws Exception {
        try (URLClassLoader loader =
                new URLClassLoader(new URL[] {classes.toUri().toURL()}, DocExamplesTest.class.getClassLoader())) {
            Method entry = loader.loadClass(main).getMethod("main", String[].class);
            entry.invoke(null, (Object) args);
        }
    }

    /** The saved pipeline's accuracy on the test rows, by Spark's evaluator. */
    private double accuracy(String model) {
        return new MulticlassClassificationEvaluator()
                .setMetricName("accuracy")
                .evaluate(PipelineModel.load(model)
                        .transform(spark.read().parquet(test))
                        .selectExpr("cast(label as double) label", "prediction"));
    }
}
