package dev.cohort.spark.ml;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.File;
import java.io.IOException;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
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
 * it stands and compiled (javac; scalac 2.13, Spark's Scala): each fits its pipeline on numeric
 * columns, saves it, and its saved model scores the test rows. The Java program is submitted as
 * the page's {@code spark-submit} line does, to a Spark of its own: a JVM whose class path is
 * Spark's alone, the program's jar and Cohort's jars given with {@code --jars}; the Scala program
 * runs on this JVM's local Spark.
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
    void theJavaProgramSubmittedAsThePageSaysFitsSavesAndItsModelScores() throws Exception {
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        Path classes = compile(
                "java",
                "FitOnSpark",
                (source, out) -> javac.run(
                                null,
                                null,
                                null,
                                "-classpath",
                                System.getProperty("java.class.path"),
                                "-d",
                                out.toString(),
                                source.toString())
                        == 0);
        assertThat(block("bash", "--class FitOnSpark")).contains("--class FitOnSpark --jars \"$(cat jars.txt)\"");
        String model = dir.resolve("java-model").toString();
        submit(jar(classes, "fit-on-spark.jar"), "FitOnSpark", train, model, test);
        assertThat(accuracy(model)).isGreaterThan(0.9);
    }

    @Test
    void theScalaProgramFitsSavesAndItsModelScores() throws Exception {
        Path classes = compile(
                "scala",
                "FitOnSparkScala",
                (source, out) -> scala.tools.nsc.Main.process(
                        new String[] {"-usejavacp", "-d", out.toString(), source.toString()}));
        String model = dir.resolve("scala-model").toString();
        run(classes, "FitOnSparkScala", train, model, test);
        assertThat(accuracy(model)).isGreaterThan(0.9);
    }

    /** The page's {@code language} program that defines {@code main}, compiled; returns its classes. */
    private Path compile(String language, String main, Compiler compiler) throws Exception {
        Path source = dir.resolve("src/" + main + "." + language);
        Files.createDirectories(source.getParent());
        Files.writeString(source, block(language, (language.equals("java") ? "class " : "object ") + main));
        Path classes = Files.createDirectories(dir.resolve(language + "-classes"));
        assertThat(compiler.compile(source, classes))
                .as("the page's %s program compiles", language)
                .isTrue();
        return classes;
    }

    /**
     * Submits {@code main} of {@code app} with {@code args} as the page does: {@code spark-submit}'s
     * own class ({@code SparkSubmit}) in a JVM of Spark's jars alone, on {@code local[2]}, Cohort
     * and what it needs at run time in {@code --jars} (this module's classes as a jar, and its
     * runtime dependencies as Maven lists them in target/runtime-jars.txt).
     */
    private void submit(Path app, String main, String... args) throws Exception {
        String jars = jar(Path.of("target/classes"), "cohort-spark-ml.jar") + ","
                + Files.readString(Path.of("target/runtime-jars.txt")).trim();
        List<String> command = new ArrayList<>(List.of(
                Path.of(System.getProperty("java.home"), "bin", "java").toString(),
                "-cp",
                sparkOnly(System.getProperty("java.class.path")),
                "org.apache.spark.deploy.SparkSubmit",
                "--master",
                "local[2]",
                "--conf",
                "spark.driver.host=127.0.0.1",
                "--conf",
                "spark.ui.enabled=false",
                "--class",
                main,
                "--jars",
                jars,
                app.toString()));
        command.addAll(List.of(args));
        Path log = dir.resolve("spark-submit.log");
        Process p = new ProcessBuilder(command)
                .redirectErrorStream(true)
                .redirectOutput(log.toFile())
                .start();
        try {
            boolean ended = p.waitFor(4, TimeUnit.MINUTES);
            assertThat(ended).as("spark-submit ended within 4 minutes").isTrue();
            assertThat(p.exitValue())
                    .as("spark-submit's exit code; its output:%n%s", Files.readString(log))
                    .isZero();
        } finally {
            p.destroyForcibly();
        }
    }

    /**
     * A Spark installation's class path from this test's: without this module's classes and the
     * libraries a Spark installation does not have (Cohort's, JavaCPP's, DJL's, picocli), which
     * must come with the application.
     */
    private static String sparkOnly(String classPath) {
        List<String> kept = new ArrayList<>();
        for (String entry : classPath.split(File.pathSeparator)) {
            // In a reactor build Cohort's modules are their target/cohort-*.jar, not ~/.m2's dev/cohort.
            boolean application = entry.endsWith("classes")
                    || Path.of(entry).getFileName().toString().startsWith("cohort-")
                    || List.of("/dev/cohort/", "/org/bytedeco/", "/ai/djl/", "/info/picocli/").stream()
                            .anyMatch(entry::contains);
            if (!application) {
                kept.add(entry);
            }
        }
        return String.join(File.pathSeparator, kept);
    }

    /** {@code classes} as the jar {@code name} in the test's directory. */
    private Path jar(Path classes, String name) throws IOException {
        Path jar = dir.resolve(name);
        try (JarOutputStream out = new JarOutputStream(Files.newOutputStream(jar));
                Stream<Path> files = Files.walk(classes)) {
            for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace(File.separatorChar, '/')));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
        return jar;
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
