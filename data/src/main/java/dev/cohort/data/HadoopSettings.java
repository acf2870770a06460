package dev.cohort.data;

import java.nio.file.Files;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;

/**
 * The Hadoop configuration a dataset is read or written with: Hadoop's defaults, then the
 * cluster's {@code core-site.xml} and {@code hdfs-site.xml} from the directory that
 * {@code HADOOP_CONF_DIR} names (as Hadoop's and Spark's commands find them), then the program's
 * own settings.
 */
final class HadoopSettings {

    private HadoopSettings() {}

    static Configuration of(Map<String, String> settings) {
        return of(settings, System.getenv("HADOOP_CONF_DIR"));
    }

    static Configuration of(Map<String, String> settings, String confDir) {
        HadoopNotes.quiet();
        Configuration conf = new Configuration();
        if (confDir != null && !confDir.isBlank()) {
            java.nio.file.Path dir = java.nio.file.Path.of(confDir);
            if (!Files.isDirectory(dir)) {
                throw new DataException(
                        confDir,
                        -1,
                        null,
                        "HADOOP_CONF_DIR names no directory: unset it, or point it at the "
                                + "cluster's configuration (core-site.xml, hdfs-site.xml)");
            }
            for (String file : new String[] {"core-site.xml", "hdfs-site.xml"}) {
                java.nio.file.Path site = dir.resolve(file);
                if (Files.isRegularFile(site)) {
                    conf.addResource(new Path(site.toUri()));
                }
            }
        }
        settings.forEach(conf::set);
        return conf;
    }
}
