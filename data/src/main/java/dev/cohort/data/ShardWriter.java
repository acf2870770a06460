package dev.cohort.data;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.example.data.Group;
import org.apache.parquet.example.data.simple.SimpleGroupFactory;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.example.ExampleParquetWriter;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.util.HadoopOutputFile;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;

/**
 * Writes examples (float features, int labels) as Parquet shards that a {@link ParquetDataset}
 * reads: files {@code part-00000.parquet, part-00001.parquet, ...} in a directory of any Hadoop
 * file system, {@code rowsPerFile} rows each, in row groups of {@code rowsPerRowGroup} rows,
 * Snappy-compressed. The features go in one list column ({@code features} by default) or in
 * scalar columns, as the {@link ColumnMapping} says; the label in an int32 column. For tests and
 * tools: it writes through Parquet's example record API, which is not the fast path.
 */
public final class ShardWriter {

    private final String directory;
    private ColumnMapping columns = ColumnMapping.list("features", "label");
    private int rowsPerRowGroup = 10_000;
    private int rowsPerFile = 100_000;
    private final Map<String, String> hadoopConf = new HashMap<>();

    private ShardWriter(String directory) {
        this.directory = directory;
    }

    /** A writer into {@code directory}: a local path or a file system URI. */
    public static ShardWriter to(String directory) {
        return new ShardWriter(directory);
    }

    /** The columns to write (default: list column {@code features}, label {@code label}). */
    public ShardWriter columns(ColumnMapping columns) {
        this.columns = columns;
        return this;
    }

    /** Rows per row group (default 10,000): the unit a loader shards by. */
    public ShardWriter rowsPerRowGroup(int rows) {
        this.rowsPerRowGroup = LoaderOptions.positive(rows, "rowsPerRowGroup");
        return this;
    }

    /** Rows per file (default 100,000). */
    public ShardWriter rowsPerFile(int rows) {
        this.rowsPerFile = LoaderOptions.positive(rows, "rowsPerFile");
        return this;
    }

    /** Hadoop settings over the defaults. */
    public ShardWriter hadoopConf(Map<String, String> settings) {
        hadoopConf.putAll(settings);
        return this;
    }

    /**
     * Writes {@code labels.length} examples, example i's features at {@code features[i * width ...]}.
     *
     * @return the files written, in order
     */
    public List<String> write(float[] features, int width, int[] labels) {
        if ((long) labels.length * width != features.length) {
            throw new IllegalArgumentException(
                    features.length + " features are not " + labels.length + " examples of " + width);
        }
        if (columns.stacked() && columns.featureColumns().size() != width) {
            throw new IllegalArgumentException("the mapping names "
                    + columns.featureColumns().size() + " feature columns for examples of " + width);
        }
        Configuration conf = new Configuration();
        hadoopConf.forEach(conf::set);
        MessageType schema = MessageTypeParser.parseMessageType(schema());
        SimpleGroupFactory groups = new SimpleGroupFactory(schema);
        List<String> files = new ArrayList<>();
        for (int start = 0, part = 0; start < labels.length || part == 0; start += rowsPerFile, part++) {
            Path file = new Path(directory, String.format("part-%05d.parquet", part));
            try (ParquetWriter<Group> writer = ExampleParquetWriter.builder(HadoopOutputFile.fromPath(file, conf))
                    .withType(schema)
                    .withConf(conf)
                    .withCompressionCodec(CompressionCodecName.SNAPPY)
                    .withWriteMode(ParquetFileWriter.Mode.OVERWRITE)
                    .withRowGroupRowCountLimit(rowsPerRowGroup)
                    .build()) {
                for (int i = start; i < Math.min(labels.length, start + rowsPerFile); i++) {
                    writer.write(row(groups, features, i, width, labels[i]));
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + file + ": " + e.getMessage(), e);
            }
            files.add(file.toString());
        }
        return files;
    }

    private Group row(SimpleGroupFactory groups, float[] features, int i, int width, int label) {
        Group row = groups.newGroup();
        if (columns.stacked()) {
            for (int k = 0; k < width; k++) {
                row.append(columns.featureColumns().get(k), features[i * width + k]);
            }
        } else {
            Group list = row.addGroup(columns.featureColumns().get(0));
            for (int k = 0; k < width; k++) {
                list.addGroup("list").append("element", features[i * width + k]);
            }
        }
        return row.append(columns.labelColumn(), label);
    }

    private String schema() {
        StringBuilder s = new StringBuilder("message cohort {\n");
        if (columns.stacked()) {
            for (String c : columns.featureColumns()) {
                s.append("  required float ").append(c).append(";\n");
            }
        } else {
            s.append("  required group ")
                    .append(columns.featureColumns().get(0))
                    .append(" (LIST) {\n    repeated group list {\n      required float element;\n    }\n  }\n");
        }
        return s.append("  required int32 ")
                .append(columns.labelColumn())
                .append(";\n}\n")
                .toString();
    }
}
