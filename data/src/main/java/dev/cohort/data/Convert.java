package dev.cohort.data;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

/**
 * Writes Parquet shards from IDX files: what {@code cohort data convert idx} runs ({@link CsvShards}
 * converts CSV files).
 *
 * <pre>
 * java dev.cohort.data.Convert idx IMAGES LABELS OUT [--rows-per-row-group N] [--rows-per-file N]
 * </pre>
 *
 * writes the examples of an IDX image file and its label file (MNIST, Fashion-MNIST; gzip'd or
 * not) into {@code OUT} (a path or a file system URI) as a list column {@code features} of
 * {@code rows x columns} floats, pixels scaled to [0, 1], and an int32 column {@code label}.
 */
public final class Convert {

    private Convert() {}

    /**
     * Converts {@code images} and {@code labels} into shards in {@code out}.
     *
     * @return the files written
     */
    public static List<String> idx(Path images, Path labels, String out, int rowsPerRowGroup, int rowsPerFile) {
        IdxImages.Examples examples = IdxImages.read(images, labels);
        return ShardWriter.to(out)
                .rowsPerRowGroup(rowsPerRowGroup)
                .rowsPerFile(rowsPerFile)
                .write(examples.features(), examples.width(), examples.labels());
    }

    /** The command line in the class comment; prints the files written. */
    public static void main(String[] args) {
        List<String> positional = new ArrayList<>();
        int rowsPerRowGroup = 10_000;
        int rowsPerFile = 100_000;
        for (int i = 0; i < args.length; i++) {
            switch (args[i]) {
                case "--rows-per-row-group" -> rowsPerRowGroup = Integer.parseInt(value(args, ++i));
                case "--rows-per-file" -> rowsPerFile = Integer.parseInt(value(args, ++i));
                default -> positional.add(args[i]);
            }
        }
        if (positional.size() != 4 || !positional.get(0).equals("idx")) {
            throw new IllegalArgumentException(
                    "usage: Convert idx IMAGES LABELS OUT [--rows-per-row-group N] [--rows-per-file N]");
        }
        for (String file : idx(
                Path.of(positional.get(1)),
                Path.of(positional.get(2)),
                positional.get(3),
                rowsPerRowGroup,
                rowsPerFile)) {
            System.out.println(file);
        }
    }

    private static String value(String[] args, int i) {
        if (i >= args.length) {
            throw new IllegalArgumentException(args[i - 1] + " needs a value");
        }
        return args[i];
    }
}
