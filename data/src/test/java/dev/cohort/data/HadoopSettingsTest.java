package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.apache.hadoop.conf.Configuration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class HadoopSettingsTest {

    @TempDir
    Path dir;

    @Test
    void theClustersSiteFilesComeBetweenHadoopsDefaultsAndTheProgramsSettings() throws IOException {
        Path conf = Files.createDirectories(dir.resolve("conf"));
        Files.writeString(conf.resolve("core-site.xml"), site("fs.defaultFS", "hdfs://namenode:8020"));
        Files.writeString(conf.resolve("hdfs-site.xml"), site("dfs.client.use.datanode.hostname", "true"));

        Configuration fromDir = HadoopSettings.of(Map.of(), conf.toString());
        assertThat(fromDir.get("fs.defaultFS")).isEqualTo("hdfs://namenode:8020");
        assertThat(fromDir.get("dfs.client.use.datanode.hostname")).isEqualTo("true");

        Configuration overridden = HadoopSettings.of(Map.of("fs.defaultFS", "file:///"), conf.toString());
        assertThat(overridden.get("fs.defaultFS")).isEqualTo("file:///");

        assertThat(HadoopSettings.of(Map.of(), null).get("fs.defaultFS")).isEqualTo("file:///");
        assertThatThrownBy(
                        () -> HadoopSettings.of(Map.of(), dir.resolve("missing").toString()))
                .isInstanceOf(DataException.class)
                .hasMessageContaining("missing")
                .hasMessageContaining("HADOOP_CONF_DIR names no directory");
    }

    private static String site(String name, String value) {
        return "<?xml version=\"1.0\"?>\n<configuration>\n  <property><name>" + name + "</name><value>" + value
                + "</value></property>\n</configuration>\n";
    }

    @Test
    void openingADatasetQuietsHadoopsNotesUnlessTheProgramSetTheirLevel() {
        Logger nativeCode = Logger.getLogger("org.apache.hadoop.util.NativeCodeLoader");
        Logger codecs = Logger.getLogger("org.apache.hadoop.io.compress.CodecPool");
        nativeCode.setLevel(null);
        codecs.setLevel(Level.FINE); // the program's own choice
        try {
            ParquetDataset.open(Shards.write(dir, 10, 5, 10), ColumnMapping.list("features", "label"));
            assertThat(nativeCode.getLevel()).isEqualTo(Level.SEVERE);
            assertThat(codecs.getLevel()).isEqualTo(Level.FINE);
        } finally {
            codecs.setLevel(null);
            HadoopNotes.quiet();
        }
        assertThat(List.of(nativeCode.getLevel(), codecs.getLevel())).containsOnly(Level.SEVERE);
    }
}
