package dev.cohort.dist;

import dev.cohort.cli.Commands;
import dev.cohort.data.ColumnMapping;
import dev.cohort.data.Convert;
import dev.cohort.data.CsvShards;
import dev.cohort.data.DataException;
import dev.cohort.data.ParquetDataset;
import dev.cohort.data.ShardWriter;
import dev.cohort.data.SyntheticShards;
import java.io.PrintWriter;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine;
import picocli.CommandLine.ArgGroup;
import picocli.CommandLine.Command;
import picocli.CommandLine.Mixin;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code cohort data}: Parquet shards for the data module ({@code dev.cohort.data}) written from IDX
 * or CSV files ({@code convert}) or random ({@code synth}), and what a dataset holds ({@code
 * inspect}). Each writing command ends by opening what it wrote and printing it, as {@code inspect}
 * does. This class is what every one of them shares: {@code --help}, {@code --version}, and, for a
 * command of commands ({@code data}, {@code data convert}) run alone, its usage.
 */
@Command(mixinStandardHelpOptions = true, versionProvider = Commands.Version.class)
class DataCommand implements Runnable {

    @Spec
    CommandSpec spec;

    @Override
    public void run() {
        spec.commandLine().usage(out());
    }

    PrintWriter out() {
        return spec.commandLine().getOut();
    }

    /** This command, for {@code cohort}'s tree. */
    static CommandLine command() {
        return new CommandLine(new Root());
    }

    @Command(
            name = "data",
            description = "Parquet datasets that every rank streams its share of (docs/DATA.md).",
            subcommands = {ConvertCommand.class, Synth.class, Inspect.class})
    static final class Root extends DataCommand {}

    /** The shape of the shards written. */
    static final class ShardOptions {
        @Option(
                names = "--rows-per-row-group",
                paramLabel = "N",
                defaultValue = "10000",
                description = "rows per row group, the unit the ranks' shares are made of (default: ${DEFAULT-VALUE})")
        int rowsPerRowGroup;

        @Option(
                names = "--rows-per-file",
                paramLabel = "M",
                defaultValue = "100000",
                description = "rows per file (default: ${DEFAULT-VALUE})")
        int rowsPerFile;

        ShardWriter writer(String out) {
            return ShardWriter.to(out).rowsPerRowGroup(rowsPerRowGroup).rowsPerFile(rowsPerFile);
        }
    }

    /** Opens {@code files} as the loaders will, prints what they hold, and returns them. */
    ParquetDataset describe(List<String> files) {
        ParquetDataset written = ParquetDataset.open(files, ColumnMapping.list("features", "label"));
        out().print(written.describe());
        out().flush();
        return written;
    }

    @Command(
            name = "convert",
            description = "Writes Parquet shards (a list column 'features' of floats, an int32 column 'label') "
                    + "into OUT, a directory or a file system URI (hdfs://...), from IDX or CSV files. "
                    + "The files appear whole or not at all: on an error nothing is left in OUT.",
            subcommands = {ConvertCommand.Idx.class, ConvertCommand.Csv.class})
    static final class ConvertCommand extends DataCommand {

        @Command(
                name = "idx",
                description = "From an IDX image file and its label file (MNIST, Fashion-MNIST; gzip'd or not): "
                        + "pixels scaled to [0, 1].")
        static final class Idx extends DataCommand {
            @Parameters(index = "0", paramLabel = "IMAGES")
            Path images;

            @Parameters(index = "1", paramLabel = "LABELS")
            Path labels;

            @Parameters(index = "2", paramLabel = "OUT")
            String directory;

            @Mixin
            ShardOptions shards;

            @Override
            public void run() {
                describe(Convert.idx(images, labels, directory, shards.rowsPerRowGroup, shards.rowsPerFile));
            }
        }

        @Command(
                name = "csv",
                description = "From numeric CSV files, streamed (any size converts in the memory of a row group): "
                        + "the first line of each is a header of column names (the same in every file) unless "
                        + "--no-header; features are parsed as floats, the label as an int. A bad value, a line "
                        + "of the wrong number of fields, a missing column or an empty file stops it with the "
                        + "file, line and column.")
        static final class Csv extends DataCommand {
            @Parameters(arity = "2..*", paramLabel = "FILE... OUT", description = "the CSV files, then OUT")
            List<String> paths;

            @Option(
                    names = "--label",
                    required = true,
                    paramLabel = "COLUMN",
                    description = "the label column: its name, or its 0-based index with --no-header")
            String label;

            @Option(
                    names = "--features",
                    split = ",",
                    paramLabel = "COLUMN",
                    description = "the feature columns, in order (default: every column but the label)")
            List<String> features = new ArrayList<>();

            @Option(
                    names = "--no-header",
                    description = "the files have no header line; columns are named 0, 1, ... (their index)")
            boolean noHeader;

            @Mixin
            ShardOptions shards;

            @Override
            public void run() {
                List<Path> files = new ArrayList<>();
                paths.subList(0, paths.size() - 1).forEach(p -> files.add(Path.of(p)));
                describe(CsvShards.from(files)
                        .label(label)
                        .features(features)
                        .header(!noHeader)
                        .writeTo(shards.writer(paths.get(paths.size() - 1))));
            }
        }
    }

    @Command(
            name = "synth",
            description = "Writes random examples into OUT (a directory or URI), e.g. for the loader's memory "
                    + "benchmark: features uniform in [0, 1), labels in [0, 10), the same for the same seed; "
                    + "in the memory of a row group, whatever --rows. Bytes on disk are about "
                    + "rows x width x 4 (random floats do not compress).")
    static final class Synth extends DataCommand {
        @Parameters(index = "0", paramLabel = "OUT")
        String directory;

        @Option(names = "--rows", required = true, paramLabel = "N", description = "examples")
        long rows;

        @Option(names = "--width", required = true, paramLabel = "W", description = "features per example")
        int width;

        @Option(names = "--seed", paramLabel = "S", defaultValue = "1", description = "(default: ${DEFAULT-VALUE})")
        long seed;

        @Mixin
        ShardOptions shards;

        @Override
        public void run() {
            long start = System.nanoTime();
            List<String> files = SyntheticShards.write(shards.writer(directory), rows, width, seed);
            double seconds = (System.nanoTime() - start) / 1e9;
            ParquetDataset written = describe(files);
            out().printf("written in %.1f s: %.1f MiB/s%n", seconds, written.bytes() / (1024.0 * 1024.0) / seconds);
            out().flush();
        }
    }

    @Command(
            name = "inspect",
            description = "Opens a dataset as the loaders do (every footer read, the schemas and list lengths "
                    + "checked) and prints its examples, width, columns and files.")
    static final class Inspect extends DataCommand {
        @Parameters(arity = "1..*", paramLabel = "PATH", description = "files, globs, directories or URIs")
        List<String> paths;

        @ArgGroup(exclusive = true)
        Features features = new Features();

        @Option(
                names = "--label",
                paramLabel = "COLUMN",
                defaultValue = "label",
                description = "the label column (default: ${DEFAULT-VALUE})")
        String label;

        static final class Features {
            @Option(
                    names = "--features",
                    paramLabel = "COLUMN",
                    description = "the list column of features (default: features)")
            String list = "features";

            @Option(
                    names = "--scalars",
                    split = ",",
                    paramLabel = "COLUMN",
                    description = "scalar columns stacked into the features, instead of a list column")
            List<String> scalars;
        }

        @Override
        public void run() {
            ColumnMapping mapping = features.scalars != null
                    ? ColumnMapping.scalars(features.scalars, label)
                    : ColumnMapping.list(features.list, label);
            try {
                out().print(ParquetDataset.open(paths, mapping).describe());
            } catch (DataException e) {
                throw new IllegalArgumentException(e.getMessage(), e); // a dataset that cannot be read: bad input here
            }
            out().flush();
        }
    }
}
