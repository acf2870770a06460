package dev.cohort.data;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.hadoop.ParquetFileWriter;
import org.apache.parquet.hadoop.ParquetWriter;
import org.apache.parquet.hadoop.api.WriteSupport;
import org.apache.parquet.hadoop.metadata.CompressionCodecName;
import org.apache.parquet.hadoop.util.HadoopOutputFile;
import org.apache.parquet.io.OutputFile;
import org.apache.parquet.io.api.RecordConsumer;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.MessageTypeParser;

/**
 * Writes examples (float features, int labels) as Parquet shards that a {@link ParquetDataset}
 * reads: files {@code part-00000.parquet, part-00001.parquet, ...} in a directory of any Hadoop
 * file system, {@code rowsPerFile} rows each, in row groups of {@code rowsPerRowGroup} rows,
 * Snappy-compressed. The features go in one list column ({@code features} by default) or in
 * scalar columns, as the {@link ColumnMapping} says; the label in an int32 column.
 *
 * <p>{@link #write} takes a whole dataset; {@link #open} streams one of any size, a chunk of rows at
 * a time, in the memory of about one row group. Either way a dataset appears whole or not at all:
 * the files are written as {@code part-NNNNN.parquet.tmp} and renamed only when the last one is
 * complete; on an error the files written so far are deleted. A directory that already holds
 * {@code *.parquet} files is refused (a dataset is all the {@code *.parquet} files of its directory).
 */
public final class ShardWriter {

    private static final String TEMP_SUFFIX = ".tmp";

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
        try (Output out = open(width)) {
            out.append(features, labels, labels.length);
            return out.finish();
        }
    }

    /**
     * Starts a dataset of examples of {@code width} features, to {@link Output#append} to and then
     * {@link Output#finish}; closing it unfinished deletes what it wrote.
     *
     * @throws IllegalArgumentException when the directory already holds {@code *.parquet} files, or
     *     the mapping's scalar columns are not {@code width}
     */
    public Output open(int width) {
        LoaderOptions.positive(width, "width");
        if (columns.stacked() && columns.featureColumns().size() != width) {
            throw new IllegalArgumentException("the mapping names "
                    + columns.featureColumns().size() + " feature columns for examples of " + width);
        }
        Configuration conf = HadoopSettings.of(hadoopConf);
        Path dir = new Path(directory);
        FileSystem fs;
        try {
            fs = dir.getFileSystem(conf);
            FileStatus[] existing = fs.exists(dir) ? fs.globStatus(new Path(dir, "*.parquet")) : null;
            if (existing != null && existing.length > 0) {
                throw new IllegalArgumentException(directory + " already holds " + existing.length
                        + " Parquet file(s), e.g. " + existing[0].getPath().getName()
                        + ": delete them or write the dataset into another directory");
            }
        } catch (IOException e) {
            throw new UncheckedIOException("cannot list " + directory + ": " + e.getMessage(), e);
        }
        return new Output(conf, fs, dir, width);
    }

    /**
     * A dataset being written: rows appended in order, cut into files and row groups as the
     * writer says. Not thread-safe.
     */
    public final class Output implements AutoCloseable {

        private final Configuration conf;
        private final FileSystem fs;
        private final Path dir;
        private final RowSupport support;
        private final int rowsPerGroup = rowsPerRowGroup;
        private final int rowsInEachFile = rowsPerFile;
        private final List<Path> written = new ArrayList<>();
        private ParquetWriter<Rows> file;
        private long rowsInFile;
        private boolean finished;

        private Output(Configuration conf, FileSystem fs, Path dir, int width) {
            this.conf = conf;
            this.fs = fs;
            this.dir = dir;
            this.support = new RowSupport(MessageTypeParser.parseMessageType(schema()), columns, width);
        }

        /** Appends {@code rows} examples: example i's features at {@code features[i * width ...]}. */
        public void append(float[] features, int[] labels, int rows) {
            Rows cursor = support.rows;
            if (rows < 0 || rows > labels.length || (long) rows * cursor.width > features.length) {
                throw new IllegalArgumentException(rows + " rows of " + cursor.width + " features are not in "
                        + features.length + " features and " + labels.length + " labels");
            }
            if (finished) {
                throw new IllegalStateException("this dataset is finished");
            }
            cursor.features = features;
            cursor.labels = labels;
            try {
                for (int i = 0; i < rows; i++) {
                    if (file == null || rowsInFile == rowsInEachFile) {
                        nextFile();
                    }
                    cursor.row = i;
                    file.write(cursor);
                    rowsInFile++;
                }
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + current() + ": " + e.getMessage(), e);
            }
        }

        /**
         * Completes the last file and gives every file its name (a dataset of no rows is one file
         * of none).
         *
         * @return the files written, in order
         */
        public List<String> finish() {
            if (finished) {
                throw new IllegalStateException("this dataset is finished");
            }
            try {
                if (file == null) {
                    nextFile();
                }
                closeFile();
                List<String> names = new ArrayList<>();
                for (Path temp : written) {
                    Path done = new Path(
                            dir, temp.getName().substring(0, temp.getName().length() - TEMP_SUFFIX.length()));
                    if (!fs.rename(temp, done)) {
                        throw new IOException("cannot rename " + temp + " to " + done.getName());
                    }
                    names.add(done.toString());
                }
                finished = true;
                return names;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot write " + current() + ": " + e.getMessage(), e);
            }
        }

        /** Unless {@link #finish} returned, deletes every file this dataset wrote (renamed or not). */
        @Override
        public void close() {
            if (finished) {
                return;
            }
            finished = true;
            try {
                if (file != null) {
                    file.close();
                }
            } catch (IOException | RuntimeException e) {
                // the file is deleted below either way
            }
            for (Path temp : written) {
                String name = temp.getName();
                deleteQuietly(temp);
                deleteQuietly(new Path(dir, name.substring(0, name.length() - TEMP_SUFFIX.length())));
            }
        }

        private void deleteQuietly(Path path) {
            try {
                fs.delete(path, false);
            } catch (IOException e) {
                // best effort: the caller is already failing with the error that matters
            }
        }

        private Path current() {
            return written.isEmpty() ? dir : written.get(written.size() - 1);
        }

        private void nextFile() throws IOException {
            closeFile();
            Path temp = new Path(dir, String.format("part-%05d.parquet%s", written.size(), TEMP_SUFFIX));
            written.add(temp);
            file = new Builder(HadoopOutputFile.fromPath(temp, conf), support)
                    .withConf(conf)
                    .withCompressionCodec(CompressionCodecName.SNAPPY)
                    .withWriteMode(ParquetFileWriter.Mode.OVERWRITE)
                    .withRowGroupRowCountLimit(rowsPerGroup)
                    .build();
            rowsInFile = 0;
        }

        private void closeFile() throws IOException {
            if (file != null) {
                file.close();
                file = null;
            }
        }
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

    /** The row to write: {@code row} of the arrays last appended (a cursor, so no object per row). */
    private static final class Rows {
        final int width;
        float[] features;
        int[] labels;
        int row;

        Rows(int width) {
            this.width = width;
        }
    }

    /**
     * Writes a row straight to Parquet's record consumer: no record objects, no boxing (what
     * makes {@code cohort data synth} write gigabytes in minutes).
     */
    private static final class RowSupport extends WriteSupport<Rows> {
        private final MessageType schema;
        private final ColumnMapping columns;
        private final int labelField;
        final Rows rows;
        private RecordConsumer out;

        RowSupport(MessageType schema, ColumnMapping columns, int width) {
            this.schema = schema;
            this.columns = columns;
            this.labelField = schema.getFieldIndex(columns.labelColumn());
            this.rows = new Rows(width);
        }

        @Override
        @SuppressWarnings("deprecation") // still the one abstract init of Parquet's WriteSupport
        public WriteContext init(Configuration configuration) {
            return new WriteContext(schema, Map.of());
        }

        @Override
        public void prepareForWrite(RecordConsumer recordConsumer) {
            this.out = recordConsumer;
        }

        @Override
        public void write(Rows r) {
            int base = r.row * r.width;
            out.startMessage();
            if (columns.stacked()) {
                for (int k = 0; k < r.width; k++) {
                    String name = columns.featureColumns().get(k);
                    out.startField(name, k);
                    out.addFloat(r.features[base + k]);
                    out.endField(name, k);
                }
            } else {
                String name = columns.featureColumns().get(0);
                out.startField(name, 0);
                out.startGroup();
                out.startField("list", 0);
                for (int k = 0; k < r.width; k++) {
                    out.startGroup();
                    out.startField("element", 0);
                    out.addFloat(r.features[base + k]);
                    out.endField("element", 0);
                    out.endGroup();
                }
                out.endField("list", 0);
                out.endGroup();
                out.endField(name, 0);
            }
            out.startField(columns.labelColumn(), labelField);
            out.addInteger(r.labels[r.row]);
            out.endField(columns.labelColumn(), labelField);
            out.endMessage();
        }
    }

    private static final class Builder extends ParquetWriter.Builder<Rows, Builder> {
        private final RowSupport support;

        Builder(OutputFile file, RowSupport support) {
            super(file);
            this.support = support;
        }

        @Override
        protected Builder self() {
            return this;
        }

        @Override
        @SuppressWarnings("deprecation") // the builder's one abstract way to give the write support
        protected WriteSupport<Rows> getWriteSupport(Configuration conf) {
            return support;
        }
    }
}
