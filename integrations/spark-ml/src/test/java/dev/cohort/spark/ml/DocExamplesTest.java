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

    /** Compiles {@code source} into {@code classes}; whether it compiled. */
    @FunctionalInterface
    private interface Compiler {
        boolean compile(Path source, Path classes);
    }

    @Test
    void theJavaProgramFitsSavesAndItsModelScores() throws Exception {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        String model = compileAndRun(
                "java",
                "FitOnSpark",
                (source, classes) -> javac.run(
                                null,
                                null,
                                null,
                                "-classpath",
                                System.getProperty("java.class.path"),
                                "-d",
                                classes.toString(),
                                source.toString())
                        == 0);
        assertThat(accuracy(model)).isGreaterThan(0.9);
    }

    @Test
    void theScalaProgramFitsSavesAndItsModelScores() throws Exception {
        String model = compileAndRun(
                "scala",
                "FitOnSparkScala",
                (source, classes) -> scala.tools.nsc.Main.process(
                        new String[] {"-usejavacp", "-d", classes.toString(), source.toString()}));
        assertThat(accuracy(model)).isGreaterThan(0.9);
    }

    /**
     * The page's {@code language} program that defines {@code main}, compiled and run to its end
     * with the training rows, a model directory and the test rows; returns the model directory.
     */
    private String compileAndRun(String language, String main, Compiler compiler) throws Exception {
        Path source = dir.resolve("src/" + main + "." + language);
        Files.createDirectories(source.getParent());
        Files.writeString(source, block(language, (language.equals("java") ? "class " : "object ") + main));
        Path classes = Files.createDirectories(dir.resolve(language + "-classes"));
        assertThat(compiler.compile(source, classes))
                .as("the page's %s program compiles", language)
                .isTrue();
        String model = dir.resolve(language + "-model").toString();
        run(classes, main, train, model, test);
        return model;
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
