package dev.cohort.data;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.TwoHosts;
import dev.cohort.testkit.WorkerProcess;
import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStream;
import java.io.InputStreamReader;
import java.io.OutputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A real HDFS as a process of its own, for tests across hosts: a NameNode and two DataNodes
 * ({@code hadoop-client-minicluster}) reachable at {@code args[1]} (the host's address), with
 * {@code args[2]} {@link Shards} examples written under {@code /cohort/shards} in row groups of 25
 * and files of 100, or, given {@code args[3]}, that local directory's Parquet files copied there
 * (args[2] is then ignored). Prints {@code HDFS READY <root URI>} once they are written, and shuts down when
 * its standard input ends (so also when the test's JVM is gone), or after {@link #LIFETIME}.
 */
public final class HdfsServer {

    /**
     * What a client on another host needs: the DataNodes report the host's address as their host
     * name, and the client connects to that (the NameNode knows them by 127.0.0.1, where they
     * registered from).
     */
    public static final Map<String, String> CLIENT_CONF = Map.of("dfs.client.use.datanode.hostname", "true");

    /** The longest it serves, if its input never ends. */
    private static final Duration LIFETIME = Duration.ofMinutes(5);

    private HdfsServer() {}

    private static int write(String root, String examples) {
        int n = Integer.parseInt(examples);
        return Shards.writer(root, 25, 100)
                .hadoopConf(CLIENT_CONF)
                .write(Shards.features(n), Shards.WIDTH, Shards.labels(n))
                .size();
    }

    private static int copy(Path local, String root) throws IOException {
        Configuration client = new Configuration();
        CLIENT_CONF.forEach(client::set);
        FileSystem hdfs = FileSystem.get(java.net.URI.create(root), client);
        int n = 0;
        try (DirectoryStream<Path> files = Files.newDirectoryStream(local, "*.parquet")) {
            for (Path f : files) {
                hdfs.copyFromLocalFile(
                        new org.apache.hadoop.fs.Path(f.toUri()),
                        new org.apache.hadoop.fs.Path(root, f.getFileName().toString()));
                n++;
            }
        }
        return n;
    }

    /**
     * {@code args}: the cluster's base directory, the address to serve at, the number of examples,
     * and optionally a local directory of Parquet files to serve instead.
     */
    public static void main(String[] args) {
        WorkerProcess.main(() -> {
            String address = args[1];
            Configuration conf = new Configuration();
            conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, args[0]);
            conf.set("dfs.namenode.rpc-bind-host", "0.0.0.0");
            conf.set("dfs.datanode.hostname", address);
            conf.set("dfs.datanode.address", address + ":0");
            conf.set("dfs.datanode.ipc.address", "127.0.0.1:0");
            conf.set("dfs.datanode.http.address", "127.0.0.1:0");
            conf.setInt("dfs.replication", 2);
            MiniDFSCluster cluster = new MiniDFSCluster.Builder(conf)
                    .numDataNodes(2)
                    .checkDataNodeHostConfig(true)
                    .checkDataNodeAddrConfig(true)
                    .build();
            try {
                cluster.waitActive();
                String root = "hdfs://" + address + ":" + cluster.getNameNodePort() + "/cohort/shards";
                int files = args.length > 3 ? copy(Path.of(args[3]), root) : write(root, args[2]);
                System.out.println("HDFS READY " + root + " (" + files + " files)");
                System.out.flush();
                CountDownLatch inputEnded = new CountDownLatch(1);
                Thread watcher = new Thread(() -> {
                    try (InputStream in = System.in) {
                        in.transferTo(OutputStream.nullOutputStream());
                    } catch (IOException e) {
                        // ended all the same
                    }
                    inputEnded.countDown();
                });
                watcher.setDaemon(true);
                watcher.start();
                if (!inputEnded.await(LIFETIME.toSeconds(), TimeUnit.SECONDS)) {
                    System.out.println("HDFS STOPPING: no end of input within " + LIFETIME);
                }
            } finally {
                cluster.shutdown();
            }
        });
    }

    /** An {@link HdfsServer} process: its output collected as it comes, stopped (or killed) on close. */
    public static final class Running implements AutoCloseable {

        private final Process process;
        private final StringBuffer output = new StringBuffer();
        private final CompletableFuture<String> ready = new CompletableFuture<>();

        private Running(Process process) {
            this.process = process;
        }

        /**
         * The server on {@code hosts}' host A, its cluster under {@code base}: serving {@code
         * examples} {@link Shards} examples, or the Parquet files of {@code local} when not null.
         */
        public static Running onHostA(TwoHosts hosts, Path base, int examples, Path local) throws IOException {
            List<String> args =
                    new java.util.ArrayList<>(List.of(base.toString(), TwoHosts.ADDRESS_A, Integer.toString(examples)));
            if (local != null) {
                args.add(local.toString());
            }
            return start(hosts.on(0, JvmWorkers.javaCommand(HdfsServer.class, List.of(), args)));
        }

        public static Running start(List<String> command) throws IOException {
            Running server = new Running(
                    new ProcessBuilder(command).redirectErrorStream(true).start());
            Thread reader = new Thread(server::readOutput, "hdfs-server-output");
            reader.setDaemon(true);
            reader.start();
            return server;
        }

        private void readOutput() {
            try (BufferedReader lines =
                    new BufferedReader(new InputStreamReader(process.getInputStream(), StandardCharsets.UTF_8))) {
                for (String line = lines.readLine(); line != null; line = lines.readLine()) {
                    output.append(line).append('\n');
                    if (line.startsWith("HDFS READY ")) {
                        ready.complete(line.split(" ")[2]);
                    }
                }
            } catch (IOException e) {
                // the process is gone; said below
            }
            ready.completeExceptionally(
                    new AssertionError("the HDFS server exited before it was ready; its output:\n" + output));
        }

        /** The dataset's root URI, once the server printed it. */
        public String awaitReady(Duration within) throws InterruptedException {
            try {
                return ready.get(within.toMillis(), TimeUnit.MILLISECONDS);
            } catch (TimeoutException e) {
                throw new AssertionError("the HDFS server was not ready within " + within + "; its output:\n" + output);
            } catch (ExecutionException e) {
                throw e.getCause() instanceof AssertionError failed ? failed : new AssertionError(e.getCause());
            }
        }

        @Override
        public void close() throws Exception {
            process.getOutputStream().close();
            if (!process.waitFor(20, TimeUnit.SECONDS)) {
                process.toHandle().descendants().forEach(ProcessHandle::destroyForcibly);
                process.destroyForcibly();
                process.waitFor(10, TimeUnit.SECONDS);
            }
        }
    }
}
