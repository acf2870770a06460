package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.runtime.threads.ThreadsWorld;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.hdfs.MiniDFSCluster;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** A real HDFS in this JVM: a NameNode and two DataNodes, shards written there, two ranks reading theirs. */
@Timeout(value = 180, unit = TimeUnit.SECONDS)
class HdfsTest {

    @TempDir
    Path dir;

    /** A NameNode and two DataNodes (replication 2) keeping their data under {@code dir}, once active. */
    static MiniDFSCluster start(Path dir) throws java.io.IOException {
        Configuration conf = new Configuration();
        conf.set(MiniDFSCluster.HDFS_MINIDFS_BASEDIR, dir.toString());
        conf.setInt("dfs.replication", 2);
        MiniDFSCluster cluster =
                new MiniDFSCluster.Builder(conf).numDataNodes(2).build();
        cluster.waitActive();
        return cluster;
    }

    @Test
    void twoRanksReadTheirSharesOverHdfsAndSeeEveryExampleOncePerEpoch() throws Exception {
        MiniDFSCluster cluster = start(dir);
        try {
            String root = cluster.getFileSystem().getUri() + "/cohort/fashion";
            assertThat(root).startsWith("hdfs://");
            Map<String, String> hdfs = Map.of("dfs.replication", "2");
            List<String> files = Shards.writer(root, 25, 100)
                    .hadoopConf(hdfs)
                    .write(Shards.features(400), Shards.WIDTH, Shards.labels(400));
            assertThat(files).hasSize(4).allMatch(f -> f.startsWith("hdfs://"));

            ThreadsWorld world = new ThreadsWorld(2, 2, Duration.ofSeconds(60));
            List<List<Integer>> seen = world.runAll(
                    rank -> {
                        ParquetDataset data = ParquetDataset.open(
                                List.of(root + "/part-*.parquet"), ColumnMapping.list("features", "label"), hdfs);
                        List<Integer> mine = new ArrayList<>();
                        for (int epoch = 0; epoch < 2; epoch++) {
                            LoaderOptions options = new LoaderOptions()
                                    .agreeOnErrors(world.group(rank))
                                    .batchSize(10)
                                    .seed(5)
                                    .remainder(Remainder.DROP)
                                    .readers(2);
                            try (ShardLoader loader = data.loader(options, DataPosition.start(epoch))) {
                                assertThat(loader.steps()).isEqualTo(20);
                                while (loader.hasNext()) {
                                    Arrays.stream(Shards.labelsChecked(loader.next()))
                                            .forEach(mine::add);
                                }
                            }
                        }
                        return mine;
                    },
                    Duration.ofSeconds(120));
            for (int epoch = 0; epoch < 2; epoch++) {
                List<Integer> both = new ArrayList<>(seen.get(0).subList(epoch * 200, epoch * 200 + 200));
                both.addAll(seen.get(1).subList(epoch * 200, epoch * 200 + 200));
                assertThat(both).as("epoch %d", epoch).hasSize(400).doesNotHaveDuplicates();
            }
            assertThat(seen.get(0).subList(0, 200)).isNotEqualTo(seen.get(0).subList(200, 400));
        } finally {
            cluster.shutdown();
        }
    }
}
