package dev.cohort.spark;

import dev.cohort.runtime.FreePorts;
import java.io.File;
import java.io.IOException;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.net.InetAddress;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.jar.JarEntry;
import java.util.jar.JarOutputStream;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;

/**
 * A real Spark standalone cluster for a test, started in {@code dir}: a master and {@code workers}
 * workers, each a JVM of its own from the Spark jars (a {@code SPARK_HOME} whose {@code jars/} links
 * this JVM's class path, as an installed Spark with the application's jars added would), each
 * worker giving one core, so every executor is one more JVM. Closing it kills them all.
 */
public final class StandaloneCluster implements AutoCloseable {

    private final Path dir;
    private final String master;
    private final int workers;
    private final List<Process> daemons = new ArrayList<>();

    private StandaloneCluster(Path dir, String master, int workers) {
        this.dir = dir;
        this.master = master;
        this.workers = workers;
    }

    /** Starts the master and {@code workers} workers of one core and 3 GiB each. */
    public static StandaloneCluster start(Path dir, int workers) throws IOException {
        Path home = sparkHome(dir);
        InetAddress loopback = InetAddress.getLoopbackAddress();
        int port = FreePorts.pick(loopback);
        StandaloneCluster cluster = new StandaloneCluster(dir, "spark://127.0.0.1:" + port, workers);
        try {
            cluster.daemon(
                    home,
                    "master",
                    "org.apache.spark.deploy.master.Master",
                    "--host",
                    "127.0.0.1",
                    "--port",
                    Integer.toString(port),
                    "--webui-port",
                    Integer.toString(FreePorts.pick(loopback)));
            for (int w = 0; w < workers; w++) {
                cluster.daemon(
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
                        Integer.toString(FreePorts.pick(loopback)),
                        "--work-dir",
                        cluster.workDir(w).toString(),
                        cluster.master);
            }
            return cluster;
        } catch (IOException | RuntimeException e) {
            cluster.close();
            throw e;
        }
    }

    /** The master's URL. */
    public String master() {
        return master;
    }

    /**
     * A driver's configuration for this cluster: one executor of one core per worker, and no job
     * before every worker has registered (up to two minutes).
     */
    public SparkConf conf(String appName) {
        return new SparkConf()
                .setMaster(master)
                .setAppName(appName)
                .set("spark.ui.enabled", "false")
                .set("spark.driver.host", "127.0.0.1")
                .set("spark.executor.cores", "1")
                .set("spark.cores.max", Integer.toString(workers))
                .set("spark.executor.memory", "2g")
                .set("spark.scheduler.minRegisteredResourcesRatio", "1.0")
                .set("spark.scheduler.maxRegisteredResourcesWaitingTime", "120s");
    }

    /** Worker {@code w}'s work directory: one subdirectory per executor it started. */
    public Path workDir(int w) {
        return dir.resolve("work-" + w);
    }

    /** How many executors the workers started (their work directories' entries). */
    public long executors() {
        long n = 0;
        for (int w = 0; w < workers; w++) {
            try (Stream<Path> entries = Files.list(workDir(w))) {
                n += entries.count();
            } catch (IOException e) {
                throw new UncheckedIOException(e);
            }
        }
        return n;
    }

    @Override
    public void close() {
        for (Process p : daemons) {
            p.descendants().forEach(ProcessHandle::destroyForcibly);
            p.destroyForcibly();
        }
        for (Process p : daemons) {
            try {
                p.waitFor(10, TimeUnit.SECONDS);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }

    private static Path sparkHome(Path dir) throws IOException {
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

    private void daemon(Path home, String name, String mainClass, String... args) throws IOException {
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
        daemons.add(pb.start());
    }
}
