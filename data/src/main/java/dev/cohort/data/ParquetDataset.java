package dev.cohort.data;

import java.io.FileNotFoundException;
import java.io.IOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ParquetMetadata;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * A list of Parquet files, or of Arrow IPC files ({@code *.arrow}, {@code *.feather}; see
 * docs/DATA.md), read as one dataset of examples, through Hadoop's {@code FileSystem}:
 * local paths, globs ({@code data/part-*.parquet}), directories (their {@code *.parquet},
 * {@code *.arrow} and {@code *.feather} files) and any Hadoop file system URI
 * ({@code hdfs://namenode:8020/data}), with no Hadoop installation. An Arrow file's record batch
 * is what this class calls a row group.
 * {@link #open} reads every file's footer at once: the row groups and their rows, the schema
 * (the same in every file) and the width of the features. The data itself is read by the
 * {@link ShardLoader}s that {@link #loader} starts, each rank its share.
 */
public final class ParquetDataset {

    /** One row group: its file, its index there, its rows and its first example's id. */
    record RowGroup(int file, int index, long rows, long firstExample) {}

    /** One file's row groups, rows and bytes (of its row groups, compressed): for {@link #describe}. */
    record FileSummary(String file, int rowGroups, long rows, long bytes) {}

    final Configuration conf;
    private final List<String> files;
    final MessageType schema;
    final ColumnMapping columns;
    private final List<ColumnDescriptor> featureLeaves;
    private final ColumnDescriptor labelLeaf;
    private final int width;
    private final List<RowGroup> rowGroups;
    private final List<FileSummary> summaries;
    private final ArrowFiles.Footers arrow;

    private ParquetDataset(
            Configuration conf,
            List<String> files,
            MessageType schema,
            ColumnMapping columns,
            int width,
            List<RowGroup> rowGroups,
            List<FileSummary> summaries,
            ArrowFiles.Footers arrow) {
        this.conf = conf;
        this.files = List.copyOf(files);
        this.schema = schema;
        this.columns = columns;
        this.featureLeaves = new ArrayList<>();
        for (String c : schema == null ? List.<String>of() : columns.featureColumns()) {
            featureLeaves.add(leaf(schema, c, files.get(0)));
        }
        this.labelLeaf = schema == null ? null : leaf(schema, columns.labelColumn(), files.get(0));
        this.arrow = arrow;
        this.width = width;
        this.rowGroups = List.copyOf(rowGroups);
        this.summaries = List.copyOf(summaries);
        if (width < 0) {
            throw new DataException(files.get(0), -1, columns.featureColumns().get(0), "no rows in any file");
        }
    }

    /**
     * Opens {@code sources} with Hadoop's defaults and, where {@code HADOOP_CONF_DIR} is set, the
     * cluster's {@code core-site.xml} and {@code hdfs-site.xml} from that directory.
     */
    public static ParquetDataset open(List<String> sources, ColumnMapping columns) {
        return open(sources, columns, Map.of());
    }

    /**
     * Opens {@code sources} (paths, globs, directories, file system URIs; see the class comment)
     * and reads every file's footer.
     *
     * @param hadoopConf Hadoop settings over the defaults and {@code HADOOP_CONF_DIR}'s, e.g. {@code fs.defaultFS}
     * @throws DataException naming the file (and column) when a source matches no file, a file is
     *     not Parquet (or Arrow IPC) or is truncated, a mapped column is missing or not numeric, the
     *     schemas of two files differ, a row group's lists are not of one length, or Parquet and Arrow
     *     files are mixed
     */
    public static ParquetDataset open(List<String> sources, ColumnMapping columns, Map<String, String> hadoopConf) {
        Configuration conf = HadoopSettings.of(hadoopConf);
        List<String> files = resolve(sources, conf);
        if (ArrowFiles.all(files)) {
            ArrowFiles.Footers footers = ArrowFiles.read(files, columns, conf);
            return new ParquetDataset(
                    conf, files, null, columns, footers.width(), footers.batches(), footers.summaries(), footers);
        }
        MessageType schema = null;
        String schemaFile = null;
        List<RowGroup> groups = new ArrayList<>();
        List<FileSummary> summaries = new ArrayList<>();
        int width = columns.stacked() ? columns.featureColumns().size() : -1;
        long first = 0;
        for (int f = 0; f < files.size(); f++) {
            String file = files.get(f);
            ParquetMetadata footer = footer(file, conf);
            MessageType fileSchema = footer.getFileMetaData().getSchema();
            if (schema == null) {
                schema = fileSchema;
                schemaFile = file;
                checkColumns(schema, columns, file);
            } else {
                checkSameSchema(schemaFile, schema, file, fileSchema);
            }
            List<BlockMetaData> blocks = footer.getBlocks();
            long fileRows = 0;
            long fileBytes = 0;
            for (int g = 0; g < blocks.size(); g++) {
                BlockMetaData block = blocks.get(g);
                if (!columns.stacked() && block.getRowCount() > 0) {
                    width = listWidth(file, g, columns.featureColumns().get(0), block, width);
                }
                groups.add(new RowGroup(f, g, block.getRowCount(), first));
                first += block.getRowCount();
                fileRows += block.getRowCount();
                fileBytes += block.getCompressedSize();
            }
            summaries.add(new FileSummary(file, blocks.size(), fileRows, fileBytes));
        }
        return new ParquetDataset(conf, files, schema, columns, width, groups, summaries, null);
    }

    /** The files, in the order their row groups are numbered. */
    public List<String> files() {
        return files;
    }

    /** The number of examples in all files. */
    public long examples() {
        return rowGroups.isEmpty()
                ? 0
                : rowGroups.get(rowGroups.size() - 1).firstExample()
                        + rowGroups.get(rowGroups.size() - 1).rows();
    }

    /** The number of row groups in all files. */
    public int rowGroups() {
        return rowGroups.size();
    }

    /** The number of features of an example. */
    public int width() {
        return width;
    }

    /** The bytes of all row groups, as stored (compressed). */
    public long bytes() {
        return summaries.stream().mapToLong(FileSummary::bytes).sum();
    }

    /**
     * What {@code cohort data inspect} prints: the examples, their width, columns and bytes, and
     * then a line per file.
     */
    public String describe() {
        StringBuilder s = new StringBuilder()
                .append(String.format(
                        "%d examples of %d features in %d %s of %d files, %s%n",
                        examples(), width, rowGroups(), unitName(), files.size(), mebibytes(bytes())))
                .append(String.format(
                        "  features: %s %s; label: %s (%s)%n",
                        columns.stacked() ? "scalar columns" : "list column",
                        columns.featureColumns(),
                        columns.labelColumn(),
                        longLabels() ? "int64" : "int32"));
        for (FileSummary f : summaries) {
            s.append(String.format(
                    "  %s: %d %s, %d rows, %s%n", f.file(), f.rowGroups(), unitName(), f.rows(), mebibytes(f.bytes())));
        }
        return s.toString();
    }

    private String unitName() {
        return arrow == null ? "row groups" : "record batches";
    }

    private static String mebibytes(long bytes) {
        return String.format("%.1f MiB", bytes / (1024.0 * 1024.0));
    }

    /** Whether labels are int64 (else int32). */
    public boolean longLabels() {
        return arrow != null
                ? arrow.longLabels()
                : labelLeaf.getPrimitiveType().getPrimitiveTypeName() == PrimitiveTypeName.INT64;
    }

    /**
     * A loader of this rank's batches of the epoch of {@code position}, from that position on: it
     * starts its reader threads now; close it to stop them.
     */
    public ShardLoader loader(LoaderOptions options, DataPosition position) {
        return new ShardLoader(this, options, position);
    }

    /** The rows of every row group, in file order: what the epoch plan splits. */
    long[] rowGroupRows() {
        return rowGroups.stream().mapToLong(RowGroup::rows).toArray();
    }

    RowGroup rowGroup(int g) {
        return rowGroups.get(g);
    }

    /** The rows of the largest row group. */
    long largestRowGroup() {
        return rowGroups.stream().mapToLong(RowGroup::rows).max().orElse(0);
    }

    /** The row group that holds example {@code id}. */
    int rowGroupOf(long id) {
        int lo = 0;
        int hi = rowGroups.size() - 1;
        while (lo < hi) {
            int mid = (lo + hi + 1) >>> 1;
            if (rowGroups.get(mid).firstExample() <= id) {
                lo = mid;
            } else {
                hi = mid - 1;
            }
        }
        return lo;
    }

    /** The Arrow IPC files' footers, or null for Parquet files. */
    ArrowFiles.Footers arrow() {
        return arrow;
    }

    List<ColumnDescriptor> featureLeaves() {
        return featureLeaves;
    }

    ColumnDescriptor labelLeaf() {
        return labelLeaf;
    }

    /** Every file {@code sources} names, in order; a glob's or directory's files sorted by name. */
    static List<String> resolve(List<String> sources, Configuration conf) {
        if (sources.isEmpty()) {
            throw new IllegalArgumentException("a dataset needs at least one source (a path, glob or URI)");
        }
        List<String> files = new ArrayList<>();
        for (String source : sources) {
            Path path = new Path(source);
            try {
                FileSystem fs = path.getFileSystem(conf);
                FileStatus[] matches = fs.globStatus(path);
                if (matches == null || matches.length == 0) {
                    throw new DataException(source, -1, null, "no such file (nor any file matching it)");
                }
                Arrays.sort(matches);
                for (FileStatus match : matches) {
                    if (match.isDirectory()) {
                        FileStatus[] inside = fs.globStatus(new Path(match.getPath(), "*.{parquet,arrow,feather}"));
                        if (inside == null || inside.length == 0) {
                            throw new DataException(
                                    match.getPath().toString(),
                                    -1,
                                    null,
                                    "a directory with no *.parquet (or *.arrow, *.feather) file");
                        }
                        Arrays.sort(inside);
                        for (FileStatus f : inside) {
                            files.add(f.getPath().toString());
                        }
                    } else {
                        files.add(match.getPath().toString());
                    }
                }
            } catch (IOException e) {
                throw new DataException(source, -1, null, "cannot list it: " + e, e);
            }
        }
        return files;
    }

    static ParquetMetadata footer(String file, Configuration conf) {
        try (ParquetFileReader reader = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(file), conf))) {
            return reader.getFooter();
        } catch (FileNotFoundException e) {
            throw new DataException(file, -1, null, "no such file", e);
        } catch (IOException | RuntimeException e) {
            throw new DataException(
                    file, -1, null, "not a Parquet file, or truncated (its footer cannot be read): " + e, e);
        }
    }

    private static void checkColumns(MessageType schema, ColumnMapping columns, String file) {
        for (String c : columns.featureColumns()) {
            ColumnDescriptor leaf = leaf(schema, c, file);
            boolean list = leaf.getMaxRepetitionLevel() == 1;
            if (list == columns.stacked() || leaf.getMaxRepetitionLevel() > 1) {
                throw new DataException(
                        file,
                        -1,
                        c,
                        columns.stacked()
                                ? "is a list, but the mapping stacks scalar columns: map it with ColumnMapping.list"
                                : "is not a list of numbers: map scalar columns with ColumnMapping.scalars");
            }
            checkNumeric(leaf, file, c, true);
        }
        ColumnDescriptor label = leaf(schema, columns.labelColumn(), file);
        if (label.getMaxRepetitionLevel() != 0) {
            throw new DataException(file, -1, columns.labelColumn(), "a label column must be a scalar, not a list");
        }
        checkNumeric(label, file, columns.labelColumn(), false);
    }

    private static void checkNumeric(ColumnDescriptor leaf, String file, String column, boolean feature) {
        PrimitiveTypeName type = leaf.getPrimitiveType().getPrimitiveTypeName();
        boolean integer = type == PrimitiveTypeName.INT32 || type == PrimitiveTypeName.INT64;
        boolean real = type == PrimitiveTypeName.FLOAT || type == PrimitiveTypeName.DOUBLE;
        if (!(integer || (feature && real))) {
            throw new DataException(
                    file,
                    -1,
                    column,
                    "holds " + type + "; "
                            + (feature
                                    ? "features must be float, double, int32 or int64"
                                    : "a label must be int32 or int64"));
        }
    }

    /** The leaf column under {@code column}: the column itself, or a list's element. */
    static ColumnDescriptor leaf(MessageType schema, String column, String file) {
        ColumnDescriptor found = null;
        for (ColumnDescriptor d : schema.getColumns()) {
            if (d.getPath()[0].equals(column)) {
                if (found != null) {
                    throw new DataException(file, -1, column, "is a group of several columns, not a list of numbers");
                }
                found = d;
            }
        }
        if (found == null) {
            List<String> names = new ArrayList<>();
            schema.getFields().forEach(t -> names.add(t.getName()));
            throw new DataException(file, -1, column, "no such column; the file has " + names);
        }
        return found;
    }

    private static void checkSameSchema(String firstFile, MessageType first, String file, MessageType other) {
        List<ColumnDescriptor> a = first.getColumns();
        List<ColumnDescriptor> b = other.getColumns();
        for (ColumnDescriptor d : a) {
            String name = String.join(".", d.getPath());
            ColumnDescriptor match = b.stream()
                    .filter(x -> Arrays.equals(x.getPath(), d.getPath()))
                    .findFirst()
                    .orElse(null);
            if (match == null) {
                throw new DataException(
                        file, -1, name, "the schema differs from " + firstFile + "'s: the column is missing here");
            }
            if (!match.getPrimitiveType().equals(d.getPrimitiveType())) {
                throw new DataException(
                        file,
                        -1,
                        name,
                        "the schema differs from " + firstFile + "'s: " + match.getPrimitiveType() + " here, "
                                + d.getPrimitiveType() + " there");
            }
        }
        for (ColumnDescriptor d : b) {
            if (a.stream().noneMatch(x -> Arrays.equals(x.getPath(), d.getPath()))) {
                throw new DataException(
                        file,
                        -1,
                        String.join(".", d.getPath()),
                        "the schema differs from " + firstFile + "'s: the column is not there");
            }
        }
    }

    /** The width a row group's list column implies (its values over its rows), checked against {@code width} so far. */
    private static int listWidth(String file, int g, String column, BlockMetaData block, int width) {
        ColumnChunkMetaData chunk = block.getColumns().stream()
                .filter(c -> c.getPath().toArray()[0].equals(column))
                .findFirst()
                .orElseThrow();
        long values = chunk.getValueCount();
        long rows = block.getRowCount();
        if (values % rows != 0 || (width >= 0 && values / rows != width)) {
            throw new DataException(
                    file,
                    g,
                    column,
                    "lists of another length: " + values + " values over " + rows
                            + " rows" + (width >= 0 ? ", where earlier row groups hold " + width + " per row" : "")
                            + "; the features must be lists of one length");
        }
        return (int) (values / rows);
    }
}
