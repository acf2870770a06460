package dev.cohort.spark;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import dev.cohort.examples.FashionMnistTrainer;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.net.ServerSocket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A real Spark standalone cluster, started here: a master and two workers, each a JVM of its own
 * from the Spark jars (a {@code SPARK_HOME} whose {@code jars/} links them), each worker giving one
 * core, so the two executors are two more JVMs. The driver (this JVM) runs the 2-rank Fashion-MNIST
 * training as a barrier stage across them.
 */
@Timeout(value = 420, unit = TimeUnit.SECONDS)
class StandaloneClusterTest {

    private static final Path DATA = Path.of("/usr/share/datasets/fashion-mnist");

    @TempDir
    Path dir;

    @Test
    void trainsAcrossTwoExecutorsOfAStandaloneCluster() throws Exception {
        assumeTrue(Files.isDirectory(DATA), "Fashion-MNIST is not installed in " + DATA);
        Path home = sparkHome();
        int port = freePort();
        String master = "spark://127.0.0.1:" + port;
        List<Process> daemons = new ArrayList<>();
        try {
            daemons.add(start(
                    home,
                    "master",
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    Integer.toString(port),
                    "--webui-port",
                    Integer.toString(freePort())));
            for (int w = 0; w < 2; w++) {
                daemons.add(start(
                        home,
                        "worker-" + w,
                        "org.apache.spark.deploy.worker.Worker",
                        "--host",
                        "127.0.0.1",
                        "--cores",
                        "1",
                        "--memory",
                        "3g",
                        "--webui-port",
                        Integer.toString(freePort()),
                        "--work-dir",
                        dir.resolve("work-" + w).toString(),
                        master));
            }
            SparkConf conf = new SparkConf()
                    .setMaster(master)
                    .setAppName("cohort-standalone-test")
                    .set("spark.ui.enabled", "false")
                    .set("spark.driver.host", "127.0.0.1")
                    .set("spark.executor.cores", "1")
                    .set("spark.cores.max", "2")
                    .set("spark.executor.memory", "2g")
                    .set("spark.scheduler.minRegisteredResourcesRatio", "1.0")
                    .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s");
            JavaSparkContext sc = new JavaSparkContext(conf);
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
            assertThat(Files.list(dir.resolve("work-0")).count()
                            + Files.list(dir.resolve("work-1")).count())
                    .isEqualTo(2);
        } finally {
            for (Process p : daemons) {
                p.descendants().forEach(ProcessHandle::destroyForcibly);
                p.destroyForcibly();
                p.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }

    /**
     * A SPARK_HOME whose jars/ holds this test's class path: Spark's jars and Cohort's (this module's
     * classes packed into a jar), as an installed Spark with the application's jars added would.
     */
    private Path sparkHome() throws IOException {
        Path home = dir.resolve("spark-home");
        Path jars = Files.createDirectories(home.resolve("jars"));
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path p = Path.of(entry);
            if (Files.isDirectory(p)) {
                packInto(p, jars.resolve("classes-" + Math.abs(entry.hashCode()) + ".jar"));
            } else if (entry.endsWith(".jar") && Files.isRegularFile(p)) {
                Path link = jars.resolve(p.getFileName());
                if (!Files.exists(link)) {
                    Files.createSymbolicLink(link, p.toAbsolutePath());
                }
            }
        }
        return home;
    }

    private static void packInto(Path classes, Path jar) throws IOException {
        try (OutputStream file = Files.newOutputStream(jar);
                JarOutputStream out = new JarOutputStream(file);
                Stream<Path> files = Files.walk(classes)) {
            for (Path f : (Iterable<Path>) files.filter(Files::isRegularFile)::iterator) {
                out.putNextEntry(new JarEntry(classes.relativize(f).toString().replace(File.separatorChar, '/')));
                Files.copy(f, out);
                out.closeEntry();
            }
        }
    }

    private Process start(Path home, String name, String mainClass, String... args) throws IOException {
        List<String> cmd = new ArrayList<>(List.of(
                Paths.get(System.getProperty("java.home"), "bin", "java").toString(),
                "-Xmx512m",
                "-cp",
                home.resolve("jars").toString() + File.separator + "*",
                mainClass));
        cmd.addAll(List.of(args));
        ProcessBuilder pb = new ProcessBuilder(cmd)
                .redirectErrorStream(true)
                .redirectOutput(dir.resolve(name + ".log").toFile());
        pb.environment().put("SPARK_HOME", home.toString());
        pb.environment().put("SPARK_SCALA_VERSION", "2.13");
        pb.environment().put("JAVA_HOME", System.getProperty("java.home"));
        pb.environment().put("SPARK_LOCAL_IP", "127.0.0.1");
        return pb.start();
    }

    private static int freePort() throws IOException {
        try (ServerSocket s = new ServerSocket(0)) {
            return s.getLocalPort();
        }
    }
}
