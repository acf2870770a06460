package dev.cohort.spark;

import dev.cohort.api.JobEnvironment;
import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.Topology;
import dev.cohort.runtime.ComputeThreads;
import dev.cohort.runtime.FreePorts;
import dev.cohort.runtime.JdkNeed;
import dev.cohort.runtime.auth.JobSecret;
import java.io.BufferedOutputStream;
import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.apache.spark.BarrierTaskContext;
import org.apache.spark.BarrierTaskInfo;
import scala.collection.Iterator;
import scala.runtime.AbstractFunction1;

/**
 * One task of the barrier stage: rank {@code partitionId} of the job. The tasks agree on the
 * rendezvous through the barrier ({@code allGather}: rank 0 posts its host and a free port), learn
 * the host layout from the stage's task infos, and each starts its rank as a child JVM, as
 * PySpark's TorchDistributor starts torchrun: the rank's libraries and native memory live and die
 * with that JVM, never the executor's. The rank's output is printed by the task (the executor's
 * log) and returned to the driver; a rank that fails, or outlives the job's timeout, fails the task
 * and so the stage, which Spark may retry (the retry's attempt number is the ranks'
 * {@code COHORT_RESTART_COUNT}, so a program resumes from its checkpoint).
 */
final class RankTask<T> extends AbstractFunction1<Iterator<T>, Iterator<RankResult>> implements Serializable {

    /** The variable naming the file a rank may write for the driver ({@link RankResult#result()}). */
    static final String RESULT_ENV = "COHORT_SPARK_RESULT";
    /** The variable naming a directory of the rank's own on its host, removed when the rank ends. */
    static final String WORK_ENV = "COHORT_SPARK_WORK";

    private static final long serialVersionUID = 1L;
    /** How many of a failed rank's last lines its failure quotes. */
    private static final int LAST_LINES = 20;

    private final SparkJob job;
    private final String runId;
    /** The run's job secret for the ranks; null when the job's environment gives its own. */
    private final String secret;
    /** Writes the partition to the rank's input; null: the rank gets none. */
    private final RankFeed<T> feed;

    RankTask(SparkJob job, String runId, String secret, RankFeed<T> feed) {
        this.job = job;
        this.runId = runId;
        this.secret = secret;
        this.feed = feed;
    }

    @Override
    public Iterator<RankResult> apply(Iterator<T> partition) {
        BarrierTaskContext context = BarrierTaskContext.get();
        int rank = context.partitionId();
        BarrierTaskInfo[] infos = context.getTaskInfos();
        if (infos.length != job.workers()) {
            throw new IllegalStateException("cohort on spark: the barrier stage has " + infos.length + " tasks for "
                    + job.workers() + " workers");
        }
        List<String> hosts = new ArrayList<>();
        for (BarrierTaskInfo info : infos) {
            hosts.add(hostOf(info.address()));
        }
        String[] posted = context.allGather(rank == 0 ? hosts.get(0) + " " + freePort() : "");
        String[] master = posted[0].split(" ");
        Map<String, String> env = new LinkedHashMap<>(layout(hosts, rank));
        env.put(LaunchEnvironment.MASTER_ADDR, master[0]);
        env.put(LaunchEnvironment.MASTER_PORT, master[1]);
        env.put(LaunchEnvironment.RUN_ID, runId);
        env.put(LaunchEnvironment.RESTART_COUNT, Integer.toString(context.stageAttemptNumber()));
        env.put(JobEnvironment.LAUNCHED_BY, "spark");
        // The rank's compute pools, sized to the task's CPUs as the launcher sizes a worker's (an
        // OpenBLAS pool of every core under each libtorch thread trained the demo 3x slower here).
        env.putAll(ComputeThreads.variables(System.getenv(), Math.max(1, context.cpus())));
        RankResult result = run(rank, env, scala.jdk.javaapi.CollectionConverters.asJava(partition));
        return scala.jdk.javaapi.CollectionConverters.asScala(List.of(result).iterator());
    }

    /** Each rank's layout from every task's host ({@link Topology#ofHosts}). */
    static Map<String, String> layout(List<String> hosts, int rank) {
        Topology t = Topology.ofHosts(hosts, rank);
        Map<String, String> env = new LinkedHashMap<>();
        env.put(LaunchEnvironment.RANK, Integer.toString(rank));
        env.put(LaunchEnvironment.WORLD_SIZE, Integer.toString(t.worldSize()));
        env.put(LaunchEnvironment.LOCAL_RANK, Integer.toString(t.localRank()));
        env.put(LaunchEnvironment.LOCAL_WORLD_SIZE, Integer.toString(t.localWorldSize()));
        env.put(LaunchEnvironment.GROUP_RANK, Integer.toString(t.nodeRank()));
        env.put(LaunchEnvironment.GROUP_WORLD_SIZE, Integer.toString(new LinkedHashSet<>(hosts).size()));
        return env;
    }

    /** "host" of a task info's "host:port". */
    static String hostOf(String address) {
        int colon = address.lastIndexOf(':');
        return colon > 0 ? address.substring(0, colon) : address;
    }

    private RankResult run(int rank, Map<String, String> env, java.util.Iterator<T> partition) {
        Path work;
        try {
            work = Files.createTempDirectory("cohort-rank-" + rank + "-");
        } catch (IOException e) {
            throw new UncheckedIOException("cohort on spark: rank " + rank + " has no temporary directory", e);
        }
        try {
            Map<String, String> all = new LinkedHashMap<>(env);
            all.put(WORK_ENV, work.toString());
            all.put(RESULT_ENV, work.resolve("result").toString());
            List<String> lines = start(rank, all, partition);
            Path result = work.resolve("result");
            return new RankResult(rank, lines, Files.exists(result) ? Files.readAllBytes(result) : new byte[0]);
        } catch (IOException e) {
            throw new UncheckedIOException("cohort on spark: rank " + rank + "'s result could not be read", e);
        } finally {
            deleteTree(work);
        }
    }

    private static void deleteTree(Path dir) {
        try (var paths = Files.walk(dir)) {
            paths.sorted(java.util.Comparator.reverseOrder())
                    .forEach(p -> p.toFile().delete());
        } catch (IOException | UncheckedIOException e) {
            // what is left stays in the temporary directory
        }
    }

    private List<String> start(int rank, Map<String, String> env, java.util.Iterator<T> partition) {
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        if (job.defaultJvmOptions()) {
            cmd.addAll(defaultJvmOptions(job.jvmOptions()));
        }
        cmd.addAll(job.jvmOptions());
        cmd.addAll(List.of("-cp", classPath(), job.mainClass()));
        cmd.addAll(job.args());
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.environment().keySet().removeIf(RankTask::launchersVariable);
        pb.environment().putAll(job.environment());
        pb.environment().putAll(env);
        if (secret != null) {
            pb.environment().put(JobSecret.ENV, secret);
        }
        List<String> lines = Collections.synchronizedList(new ArrayList<>());
        Process process;
        try {
            process = pb.start();
        } catch (IOException e) {
            throw new IllegalStateException(
                    "cohort on spark: rank " + rank + " could not start " + cmd.get(0) + ": " + e, e);
        }
        Thread reader = new Thread(() -> copy(process, rank, lines), "cohort-rank-" + rank + "-output");
        reader.setDaemon(true);
        reader.start();
        try {
            feed(rank, process, partition);
            if (!process.waitFor(job.timeout().toMillis(), TimeUnit.MILLISECONDS)) {
                throw new IllegalStateException("cohort on spark: rank " + rank + " ran past the job's timeout of "
                        + job.timeout() + " and was killed" + tail(lines));
            }
            reader.join(10_000);
            int exit = process.exitValue();
            if (exit != 0) {
                throw new IllegalStateException("cohort on spark: rank " + rank + " (" + job.mainClass()
                        + ") exited with code " + exit + tail(lines));
            }
            return new ArrayList<>(lines);
        } catch (InterruptedException e) {
            // Spark kills the task (another task of the stage failed, or the job was cancelled).
            Thread.currentThread().interrupt();
            throw new IllegalStateException("cohort on spark: rank " + rank + "'s task was stopped", e);
        } finally {
            if (process.isAlive()) {
                process.descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
            }
        }
    }

    /**
     * Writes the partition to the rank's input and closes it. A rank that stops reading (it failed)
     * ends the writing: its exit code and output then say why.
     */
    private void feed(int rank, Process process, java.util.Iterator<T> partition) {
        try (OutputStream in = new BufferedOutputStream(process.getOutputStream(), 1 << 16)) {
            if (feed != null) {
                feed.write(partition, in);
            }
        } catch (IOException e) {
            // The rank closed its input: it ended; waitFor reports how.
        }
    }

    /**
     * What {@code ./cohort run} gives its workers too: on JDK 22+ the shared-memory engines' module
     * and native access, on JDK 24+ libtorch's use of sun.misc.Unsafe without warnings, and log
     * records on one line each, unless the job's own options configure java.util.logging.
     */
    static List<String> defaultJvmOptions(List<String> given) {
        List<String> options = new ArrayList<>();
        int jdk = Runtime.version().feature();
        if (jdk >= 22) {
            options.addAll(List.of("--add-modules=jdk.incubator.vector", "--enable-native-access=ALL-UNNAMED"));
        }
        if (jdk >= 24) {
            options.add("--sun-misc-unsafe-memory-access=allow");
        }
        if (given.stream().noneMatch(o -> o.startsWith("-Djava.util.logging."))) {
            options.add("-Djava.util.logging.SimpleFormatter.format=%4$s %3$s: %5$s%6$s%n");
        }
        return options;
    }

    /** Prints the rank's output as it comes (the executor's log), each line tagged, and keeps it. */
    private static void copy(Process process, int rank, List<String> lines) {
        try (BufferedReader in =
                new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
            int read = 0;
            for (String line = in.readLine(); line != null; line = in.readLine()) {
                if (++read <= JdkNeed.NOTICE_LINES && JdkNeed.INCUBATOR_NOTICE.equals(line)) {
                    continue; // the shm engine's module, added on purpose
                }
                String tagged = "[rank " + rank + "] " + line;
                lines.add(tagged);
                System.out.println(tagged);
            }
        } catch (IOException e) {
            lines.add("[rank " + rank + "] (output lost: " + e + ")");
        }
    }

    private static String tail(List<String> lines) {
        synchronized (lines) {
            if (lines.isEmpty()) {
                return "; it printed nothing";
            }
            return "; its last lines:\n"
                    + String.join("\n", lines.subList(Math.max(0, lines.size() - LAST_LINES), lines.size()));
        }
    }

    /** Another launcher's variables in the executor's own environment: never passed to a rank. */
    private static boolean launchersVariable(String name) {
        return name.startsWith("SLURM_")
                || name.startsWith("OMPI_")
                || name.startsWith("PMIX_")
                || name.startsWith("TORCHELASTIC_")
                || name.startsWith("COHORT_")
                || Set.of(
                                LaunchEnvironment.RANK,
                                LaunchEnvironment.WORLD_SIZE,
                                LaunchEnvironment.LOCAL_RANK,
                                LaunchEnvironment.LOCAL_WORLD_SIZE,
                                LaunchEnvironment.GROUP_RANK,
                                LaunchEnvironment.GROUP_WORLD_SIZE,
                                LaunchEnvironment.MASTER_ADDR,
                                LaunchEnvironment.MASTER_PORT)
                        .contains(name);
    }

    /** The executor's class path and the jars Spark added for the application (--jars, spark.jars). */
    static String classPath() {
        Set<String> parts = new LinkedHashSet<>(
                List.of(System.getProperty("java.class.path").split(File.pathSeparator)));
        for (ClassLoader cl = Thread.currentThread().getContextClassLoader(); cl != null; cl = cl.getParent()) {
            if (cl instanceof URLClassLoader urls) {
                for (URL url : urls.getURLs()) {
                    if ("file".equals(url.getProtocol())) {
                        try {
                            parts.add(Path.of(url.toURI()).toString());
                        } catch (java.net.URISyntaxException | RuntimeException e) {
                            // not a local file: the rank cannot load it anyway
                        }
                    }
                }
            }
        }
        parts.remove("");
        return String.join(File.pathSeparator, parts);
    }

    /** A port free on this host a moment ago, below the ephemeral range (see {@link FreePorts}). */
    private static int freePort() {
        try {
            return FreePorts.pick(null);
        } catch (IllegalStateException e) {
            throw new IllegalStateException("cohort on spark: rank 0's host: " + e.getMessage(), e);
        }
    }
}
