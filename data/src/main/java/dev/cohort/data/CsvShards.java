package dev.cohort.data;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.charset.CharacterCodingException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Converts numeric CSV files into shards ({@link ShardWriter}): the feature columns become one
 * list column {@code features} of floats, the label column an int32 column {@code label}, so the
 * result reads with {@code ColumnMapping.list("features", "label")}. The files are read line by
 * line and written a chunk of rows at a time, so a CSV far larger than memory converts in the
 * memory of about one row group.
 *
 * <p>The first line of each file is a header of column names (all the files' the same), or with
 * {@link #header header(false)} there is none and columns are named by their 0-based index
 * ({@code "0"}, {@code "1"}, ...). The features are every column but the label, in file order,
 * unless {@link #features} names them. Fields are separated by commas, may be surrounded by
 * spaces and by double quotes (a quoted comma is not supported); features are parsed as floats,
 * the label as an int; blank lines are skipped. Any other input (or no rows at all) is a
 * {@link CsvException} naming the file, line and column, and then no shard is left behind.
 */
public final class CsvShards {

    /** Rows parsed before they go to the writer. */
    private static final int CHUNK = 1024;

    private final List<Path> files;
    private String label;
    private List<String> features = List.of();
    private boolean header = true;

    private CsvShards(List<Path> files) {
        if (files.isEmpty()) {
            throw new IllegalArgumentException("a CSV conversion needs at least one file");
        }
        this.files = List.copyOf(files);
    }

    /** A conversion of {@code files}, read in this order. */
    public static CsvShards from(List<Path> files) {
        return new CsvShards(files);
    }

    /** The label column: a name in the header, or a 0-based index without one. Required. */
    public CsvShards label(String column) {
        this.label = column;
        return this;
    }

    /** The feature columns, in the vector's order (default: every column but the label). */
    public CsvShards features(List<String> columns) {
        this.features = List.copyOf(columns);
        return this;
    }

    /** Whether each file starts with a header of column names (default true). */
    public CsvShards header(boolean hasHeader) {
        this.header = hasHeader;
        return this;
    }

    /**
     * Converts the files into {@code writer}'s directory.
     *
     * @return the files written, in order
     * @throws CsvException naming the file, line and column of the first bad input
     */
    public List<String> writeTo(ShardWriter writer) {
        if (label == null || label.isBlank()) {
            throw new IllegalArgumentException("a CSV conversion needs a label column");
        }
        for (Path file : files) {
            if (!Files.isRegularFile(file)) {
                throw new CsvException(file.toString(), 0, null, "no such file");
            }
        }
        try (Conversion conversion = new Conversion(writer)) {
            for (Path file : files) {
                conversion.read(file);
            }
            return conversion.finish();
        }
    }

    /**
     * Where the columns are, decided by the first file.
     *
     * @param names    the columns' names (indices without a header)
     * @param label    the label's index
     * @param features the features' indices, in vector order
     * @param file     the first file
     */
    private record Layout(List<String> names, int label, int[] features, String file) {}

    private Layout layout(String file, long line, List<String> names) {
        int labelIndex = index(file, line, names, label);
        int[] featureIndices;
        if (features.isEmpty()) {
            featureIndices = new int[names.size() - 1];
            for (int i = 0, k = 0; i < names.size(); i++) {
                if (i != labelIndex) {
                    featureIndices[k++] = i;
                }
            }
        } else {
            featureIndices = new int[features.size()];
            for (int k = 0; k < features.size(); k++) {
                featureIndices[k] = index(file, line, names, features.get(k));
                if (featureIndices[k] == labelIndex) {
                    throw new CsvException(file, line, features.get(k), "both the label and a feature");
                }
            }
        }
        if (featureIndices.length == 0) {
            throw new CsvException(file, line, label, "the only column is the label: no features to convert");
        }
        return new Layout(names, labelIndex, featureIndices, file);
    }

    private int index(String file, long line, List<String> names, String column) {
        int i = names.indexOf(column);
        if (i < 0) {
            throw new CsvException(
                    file,
                    line,
                    column,
                    header
                            ? "no such column in the header " + names
                            : "no such column: without a header, columns are named by their 0-based index, 0 to "
                                    + (names.size() - 1));
        }
        return i;
    }

    private static String field(String raw) {
        String s = raw.strip();
        return s.length() >= 2 && s.charAt(0) == '"' && s.charAt(s.length() - 1) == '"'
                ? s.substring(1, s.length() - 1).strip()
                : s;
    }

    /** One conversion's state: the layout, the writer's output and a chunk of parsed rows. */
    private final class Conversion implements AutoCloseable {
        private final ShardWriter writer;
        private Layout layout;
        private ShardWriter.Output out;
        private float[] chunkFeatures;
        private int[] chunkLabels;
        private int filled;
        private long rows;

        Conversion(ShardWriter writer) {
            this.writer = writer;
        }

        void read(Path path) {
            String file = path.toString();
            try (BufferedReader in = Files.newBufferedReader(path, StandardCharsets.UTF_8)) {
                long number = 0;
                boolean first = true;
                for (String line = in.readLine(); line != null; line = in.readLine()) {
                    number++;
                    if (number == 1 && line.startsWith("\uFEFF")) {
                        line = line.substring(1); // a byte-order mark
                    }
                    if (line.isBlank()) {
                        continue;
                    }
                    String[] fields = line.split(",", -1);
                    if (first) {
                        first = false;
                        start(file, number, fields);
                        if (header) {
                            continue;
                        }
                    }
                    row(file, number, fields);
                }
                if (first) {
                    throw new CsvException(file, 0, null, header ? "empty: no header line" : "empty: no line");
                }
            } catch (CharacterCodingException e) {
                throw new CsvException(file, 0, null, "not UTF-8 text: " + e);
            } catch (IOException e) {
                throw new UncheckedIOException("cannot read " + file + ": " + e.getMessage(), e);
            }
        }

        private void start(String file, long line, String[] fields) {
            List<String> names = new ArrayList<>();
            for (int i = 0; i < fields.length; i++) {
                names.add(header ? field(fields[i]) : Integer.toString(i));
            }
            if (layout == null) {
                layout = layout(file, line, names);
                out = writer.open(layout.features().length);
                chunkFeatures = new float[CHUNK * layout.features().length];
                chunkLabels = new int[CHUNK];
            } else if (header && !names.equals(layout.names())) {
                throw new CsvException(
                        file,
                        line,
                        null,
                        "the header " + names + " differs from " + layout.file() + "'s " + layout.names());
            }
        }

        private void row(String file, long line, String[] fields) {
            List<String> names = layout.names();
            if (fields.length != names.size()) {
                throw new CsvException(
                        file,
                        line,
                        null,
                        fields.length + " fields where "
                                + (header ? "the header has " : "the first line of " + layout.file() + " has ")
                                + names.size());
            }
            int[] featureIndices = layout.features();
            int base = filled * featureIndices.length;
            for (int k = 0; k < featureIndices.length; k++) {
                String value = field(fields[featureIndices[k]]);
                try {
                    chunkFeatures[base + k] = Float.parseFloat(value);
                } catch (NumberFormatException e) {
                    throw new CsvException(file, line, names.get(featureIndices[k]), "'" + value + "' is not a number");
                }
            }
            String value = field(fields[layout.label()]);
            try {
                chunkLabels[filled] = Integer.parseInt(value);
            } catch (NumberFormatException e) {
                throw new CsvException(
                        file, line, names.get(layout.label()), "'" + value + "' is not an integer (a label is an int)");
            }
            rows++;
            if (++filled == CHUNK) {
                flush();
            }
        }

        private void flush() {
            out.append(chunkFeatures, chunkLabels, filled);
            filled = 0;
        }

        List<String> finish() {
            if (rows == 0) {
                throw new CsvException(layout.file(), 0, null, "no rows in any file (headers only)");
            }
            flush();
            return out.finish();
        }

        @Override
        public void close() {
            if (out != null) {
                out.close();
            }
        }
    }
}
