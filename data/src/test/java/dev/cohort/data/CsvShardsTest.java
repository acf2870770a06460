package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.stream.IntStream;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

@Timeout(60)
class CsvShardsTest {

    /** The columns of {@link #rows}: the label third, among the features. */
    private static final String HEADER = "f0, \"f1\",label,f2,f3,f4\n";

    /** Enough rows that a bad line after them finds files already written. */
    private static final int GOOD = 2100;

    @TempDir
    Path dir;

    private Path csv(String name, String text) throws IOException {
        Path file = dir.resolve(name);
        Files.writeString(file, text);
        return file;
    }

    /** Examples {@code start} to {@code end - 1} as {@link Shards} makes them, a line each (LF or CRLF). */
    private static String rows(int start, int end) {
        StringBuilder s = new StringBuilder();
        for (int i = start; i < end; i++) {
            s.append(Shards.feature(i, 0))
                    .append(',')
                    .append(Shards.feature(i, 1))
                    .append(',')
                    .append(i);
            for (int k = 2; k < Shards.WIDTH; k++) {
                s.append(',').append(Shards.feature(i, k));
            }
            s.append(i % 2 == 0 ? "\n" : "\r\n");
        }
        return s.toString();
    }

    private String out() {
        return dir.resolve("out").toString();
    }

    /** The files left in {@link #out}, checksums included. */
    private List<String> left() throws IOException {
        Path out = Path.of(out());
        if (!Files.isDirectory(out)) {
            return List.of();
        }
        try (Stream<Path> files = Files.list(out)) {
            return files.map(f -> f.getFileName().toString()).sorted().toList();
        }
    }

    private static int[] allLabelsChecked(List<String> files) {
        ParquetDataset data = ParquetDataset.open(files, ColumnMapping.list("features", "label"));
        List<Integer> labels = new ArrayList<>();
        try (ShardLoader loader =
                data.loader(new LoaderOptions().batchSize(1000).shuffleBuffer(0), DataPosition.start(0))) {
            while (loader.hasNext()) {
                Arrays.stream(Shards.labelsChecked(loader.next())).forEach(labels::add);
            }
        }
        return labels.stream().mapToInt(Integer::intValue).sorted().toArray();
    }

    @Test
    void csvFilesBecomeShardsOfEveryOtherColumnAsFeaturesInFileOrderAndTheLabel() throws IOException {
        Path a = csv("a.csv", "\uFEFF" + HEADER + rows(0, 1500) + "\n  \n");
        Path b = csv("b.csv", HEADER + rows(1500, 2600));
        List<String> files = CsvShards.from(List.of(a, b)).label("label").writeTo(Shards.writer(out(), 700, 1000));

        assertThat(files).hasSize(3);
        ParquetDataset data = ParquetDataset.open(files, ColumnMapping.list("features", "label"));
        assertThat(data.rowGroups()).isEqualTo(5); // 700 + 300, 700 + 300, 600
        assertThat(data.width()).isEqualTo(Shards.WIDTH);
        assertThat(allLabelsChecked(files))
                .containsExactly(IntStream.range(0, 2600).toArray());
        assertThat(left())
                .filteredOn(f -> !f.endsWith(".crc"))
                .containsExactly("part-00000.parquet", "part-00001.parquet", "part-00002.parquet");
    }

    @Test
    void featuresChosenByIndexWithoutAHeader() throws IOException {
        Path a = csv("a.csv", "1,2,3,7\n4, 5 ,\"6\",8\n");
        List<String> files = CsvShards.from(List.of(a))
                .header(false)
                .label("3")
                .features(List.of("2", "0"))
                .writeTo(ShardWriter.to(out()));
        ParquetDataset data = ParquetDataset.open(files, ColumnMapping.list("features", "label"));
        assertThat(data.width()).isEqualTo(2);
        try (ShardLoader loader =
                data.loader(new LoaderOptions().batchSize(2).shuffleBuffer(0), DataPosition.start(0))) {
            Batch batch = loader.next();
            float[] features = new float[4];
            batch.features().get(0, features);
            assertThat(new int[] {batch.intLabels().get(0), batch.intLabels().get(1)})
                    .containsExactly(7, 8);
            assertThat(features).containsExactly(3f, 1f, 6f, 4f);
        }
    }

    static Stream<Arguments> badInput() {
        String good = HEADER + rows(0, GOOD);
        int next = GOOD + 2; // the header is line 1
        return Stream.of(
                Arguments.of(
                        "not a number",
                        good + "1,2,5,x,4,5\n",
                        "",
                        "label",
                        List.of(),
                        "a.csv, line " + next + ", column 'f2': 'x' is not a number"),
                Arguments.of(
                        "an empty field",
                        good + "1,,5,3,4,5\n",
                        "",
                        "label",
                        List.of(),
                        "a.csv, line " + next + ", column 'f1': '' is not a number"),
                Arguments.of(
                        "a label not an int",
                        good + "1,2,3.5,3,4,5\n",
                        "",
                        "label",
                        List.of(),
                        "a.csv, line " + next + ", column 'label': '3.5' is not an integer (a label is an int)"),
                Arguments.of(
                        "too few fields",
                        good + "1,2,3,4,5\n",
                        "",
                        "label",
                        List.of(),
                        "a.csv, line " + next + ": 5 fields where the header has 6"),
                Arguments.of(
                        "no label column",
                        good,
                        "",
                        "y",
                        List.of(),
                        "a.csv, line 1, column 'y': no such column in the header [f0, f1, label, f2, f3, f4]"),
                Arguments.of(
                        "no feature column",
                        good,
                        "",
                        "label",
                        List.of("f0", "g"),
                        "a.csv, line 1, column 'g': no such column in the header [f0, f1, label, f2, f3, f4]"),
                Arguments.of(
                        "the label as a feature",
                        good,
                        "",
                        "label",
                        List.of("label"),
                        "a.csv, line 1, column 'label': both the label and a feature"),
                Arguments.of("an empty file", "", "", "label", List.of(), "a.csv: empty: no header line"),
                Arguments.of("only blank lines", "\n \n", "", "label", List.of(), "a.csv: empty: no header line"),
                Arguments.of(
                        "only the header", HEADER, "", "label", List.of(), "a.csv: no rows in any file (headers only)"),
                Arguments.of(
                        "another header in the second file",
                        good,
                        "f0,f1,label,f2,f3\n1,2,3,4,5\n",
                        "label",
                        List.of(),
                        "b.csv, line 1: the header [f0, f1, label, f2, f3] differs from "),
                Arguments.of("the second file empty", good, "", "label", List.of(), "b.csv: empty: no header line"));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("badInput")
    void badInputNamesTheFileLineAndColumnAndLeavesNoShard(
            String what, String first, String second, String label, List<String> features, String message)
            throws IOException {
        Path a = csv("a.csv", first);
        List<Path> files = new ArrayList<>(List.of(a));
        if (!second.isEmpty() || what.contains("second")) {
            files.add(csv("b.csv", second));
        }
        assertThatThrownBy(() ->
                        CsvShards.from(files).label(label).features(features).writeTo(Shards.writer(out(), 500, 1000)))
                .isInstanceOf(CsvException.class)
                .hasMessageStartingWith(dir + File.separator + message);
        assertThat(left()).as("what the failed conversion left in " + out()).isEmpty();
    }

    @Test
    void badInputWithoutAHeaderAndAMissingFile() throws IOException {
        Path a = csv("a.csv", "1,2,3\n1,2\n");
        CsvShards noHeader = CsvShards.from(List.of(a)).header(false).label("2");
        assertThatThrownBy(() -> noHeader.writeTo(ShardWriter.to(out())))
                .isInstanceOf(CsvException.class)
                .hasMessage(a + ", line 2: 2 fields where the first line of " + a + " has 3")
                .satisfies(e -> assertThat(((CsvException) e).where())
                        .isEqualTo(new CsvException.Where(a.toString(), 2, null)));
        assertThatThrownBy(() -> noHeader.label("3").writeTo(ShardWriter.to(out())))
                .hasMessage(a + ", line 1, column '3': no such column: without a header, columns are named by "
                        + "their 0-based index, 0 to 2");
        Path missing = dir.resolve("nope.csv");
        assertThatThrownBy(() -> CsvShards.from(List.of(a, missing)).label("x").writeTo(ShardWriter.to(out())))
                .isInstanceOf(CsvException.class)
                .hasMessage(missing + ": no such file");
        assertThat(left()).isEmpty();
    }

    @Test
    void aDirectoryThatHoldsADatasetIsRefused() throws IOException {
        Path a = csv("a.csv", HEADER + rows(0, 10));
        CsvShards conversion = CsvShards.from(List.of(a)).label("label");
        conversion.writeTo(ShardWriter.to(out()));
        assertThatThrownBy(() -> conversion.writeTo(ShardWriter.to(out())))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessage(out() + " already holds 1 Parquet file(s), e.g. part-00000.parquet: delete them or "
                        + "write the dataset into another directory");
    }
}
