package dev.cohort.data;

import dev.cohort.testkit.WorkerProcess;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;

/**
 * A real HDFS as a process of its own, for tests across hosts: a NameNode and two DataNodes
 * ({@code hadoop-client-minicluster}) reachable at {@code args[1]} (the host's address), with
 * {@code args[2]} {@link Shards} examples written under {@code /cohort/shards} in row groups of 25
 * and files of 100. Prints {@code HDFS READY <root URI>} once they are written, and shuts down when
 * its standard input ends (so also when the test's JVM is gone), or after {@link #LIFETIME}.
 */
public final class HdfsServer {

    /**
     * What a client on another host needs: the DataNodes report the host's address as their host
     * name, and the client connects to that (the NameNode knows them by 127.0.0.1, where they
     * registered from).
     */
    static final Map<String, String> CLIENT_CONF = Map.of("dfs.client.use.datanode.hostname", "true");

    /** The longest it serves, if its input never ends. */
    private static final Duration LIFETIME = Duration.ofMinutes(5);

    private HdfsServer() {}

    /** {@code args}: the cluster's base directory, the address to serve at, the number of examples. */
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
                int examples = Integer.parseInt(args[2]);
                List<String> files = Shards.writer(root, 25, 100)
                        .hadoopConf(CLIENT_CONF)
                        .write(Shards.features(examples), Shards.WIDTH, Shards.labels(examples));
                System.out.println("HDFS READY " + root + " (" + files.size() + " files)");
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
}
