package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code cohort data convert|synth|inspect} run in-process, as {@code cohort} runs them. */
@Timeout(60)
class DataCommandTest {

    /** The last run's command and what it wrote. */
    private Cli cli;

    @TempDir
    Path dir;

    private int run(String... args) {
        cli = new Cli();
        return cli.run(args);
    }

    /** An IDX file: the magic (unsigned bytes, {@code dims} dimensions), the sizes, then the bytes. */
    private Path idx(String name, int[] sizes, byte[] values) throws IOException {
        ByteBuffer b = ByteBuffer.allocate(4 + 4 * sizes.length + values.length);
        b.putInt(0x0800 + sizes.length);
        for (int s : sizes) {
            b.putInt(s);
        }
        Files.write(dir.resolve(name), b.put(values).array());
        return dir.resolve(name);
    }

    @Test
    void synthWritesRandomShardsThatInspectDescribes() {
        String synth = dir.resolve("synth").toString();
        assertThat(run(
                        "data",
                        "synth",
                        synth,
                        "--rows",
                        "3000",
                        "--width",
                        "7",
                        "--seed",
                        "3",
                        "--rows-per-row-group",
                        "1000",
                        "--rows-per-file",
                        "2000"))
                .as(cli.err.toString())
                .isZero();
        assertThat(cli.out.toString())
                .startsWith("3000 examples of 7 features in 3 row groups of 2 files, ")
                .contains("written in ")
                .contains("MiB/s");
        assertThat(run("data", "inspect", synth)).as(cli.err.toString()).isZero();
        assertThat(cli.out.toString())
                .startsWith("3000 examples of 7 features in 3 row groups of 2 files, ")
                .contains("features: list column [features]; label: label (int32)")
                .contains("part-00001.parquet: 1 row groups, 1000 rows, ");
    }

    @Test
    void convertWritesShardsFromIdxAndCsv() throws IOException {
        Path images = idx("images", new int[] {3, 2, 2}, new byte[12]);
        Path labels = idx("labels", new int[] {3}, new byte[] {7, 0, 9});
        assertThat(run(
                        "data",
                        "convert",
                        "idx",
                        images.toString(),
                        labels.toString(),
                        dir.resolve("idx").toString()))
                .as(cli.err.toString())
                .isZero();
        assertThat(cli.out.toString()).startsWith("3 examples of 4 features in 1 row groups of 1 files, ");

        Path a = Files.writeString(dir.resolve("a.csv"), "x,y,class\n1,2,0\n3,4,1\n");
        Path b = Files.writeString(dir.resolve("b.csv"), "x,y,class\n5,6,1\n");
        assertThat(run(
                        "data",
                        "convert",
                        "csv",
                        a.toString(),
                        b.toString(),
                        dir.resolve("csv").toString(),
                        "--label",
                        "class",
                        "--features",
                        "y,x",
                        "--rows-per-row-group",
                        "2"))
                .as(cli.err.toString())
                .isZero();
        assertThat(cli.out.toString()).startsWith("3 examples of 2 features in 2 row groups of 1 files, ");
    }

    @Test
    void badInputIsOneLineNamingTheFileLineAndColumnAndExitTwo() throws IOException {
        Path a = Files.writeString(dir.resolve("a.csv"), "x,y,class\n1,2,0\n3,four,1\n");
        String csv = dir.resolve("csv").toString();
        assertThat(run("data", "convert", "csv", a.toString(), csv, "--label", "class"))
                .isEqualTo(2);
        assertThat(cli.err.toString())
                .isEqualTo("cohort data convert csv: " + a + ", line 3, column 'y': 'four' is not a number"
                        + System.lineSeparator() + "see cohort data convert csv --help" + System.lineSeparator());
        assertThat(dir.resolve("csv"))
                .satisfiesAnyOf(
                        p -> assertThat(p).doesNotExist(), p -> assertThat(p).isEmptyDirectory());

        assertThat(run("data", "convert", "csv", a.toString(), csv)).isEqualTo(2);
        assertThat(cli.err.toString()).contains("Missing required option: '--label=COLUMN'");
        assertThat(run("data", "synth", csv, "--rows", "0", "--width", "3")).isEqualTo(2);
        assertThat(cli.err.toString()).startsWith("cohort data synth: rows must be >= 1, not 0");
        assertThat(run("data", "inspect", dir.resolve("nope").toString())).isEqualTo(2);
        assertThat(cli.err.toString())
                .startsWith("cohort data inspect: " + dir.resolve("nope") + ": no such file")
                .doesNotContain("\tat ");
    }

    @Test
    void helpOnEveryDataCommand() {
        for (String[] args : new String[][] {
            {"data"},
            {"data", "--help"},
            {"data", "convert", "--help"},
            {"data", "convert", "csv", "--help"},
            {"data", "convert", "idx", "--help"},
            {"data", "synth", "--help"},
            {"data", "inspect", "--help"}
        }) {
            assertThat(run(args)).as(String.join(" ", args)).isZero();
            assertThat(cli.out.toString()).startsWith("Usage: cohort data");
        }
        assertThat(run("data", "convert", "csv", "--help")).isZero();
        assertThat(cli.out.toString()).contains("--rows-per-row-group=N").contains("--no-header");
    }
}
