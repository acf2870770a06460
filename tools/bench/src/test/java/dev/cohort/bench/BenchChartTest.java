package dev.cohort.bench;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.within;

import java.awt.image.BufferedImage;
import java.io.ByteArrayOutputStream;
import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.net.URISyntaxException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Objects;
import java.util.concurrent.TimeUnit;
import javax.imageio.ImageIO;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import picocli.CommandLine;

/** {@code cohort bench chart} on real result files of Cohort and of the peers (test resources, results/). */
@Timeout(value = 60, unit = TimeUnit.SECONDS)
class BenchChartTest {

    @TempDir
    Path dir;

    private static Path fixture(String name) {
        try {
            return Path.of(Objects.requireNonNull(BenchChartTest.class.getResource("/results/" + name), name)
                    .toURI());
        } catch (URISyntaxException e) {
            throw new IllegalStateException(e);
        }
    }

    @Test
    void readsCohortsJsonThePeersJsonAndOpenMpisTable() throws IOException {
        Results.Result shm = Results.read(fixture("shm-copy-1.json"));
        assertThat(shm.engine()).isEqualTo("cohort-shm");
        assertThat(shm.cohort()).isTrue();
        assertThat(shm.world()).isEqualTo(2);
        assertThat(shm.of("allreduce"))
                .extracting(Results.Row::bytes)
                .containsExactly(4096L, 65536L, 1048576L, 16777216L);

        Results.Result torch = Results.read(fixture("torch-gloo-1.json"));
        assertThat(torch.engine()).isEqualTo("torch-gloo");
        assertThat(torch.cohort()).isFalse();
        assertThat(torch.of("allreduce").get(0).medianS()).isEqualTo(0.0005633820001094136);

        Results.Result mpi = Results.read(fixture("mpi-shm-1.txt"));
        assertThat(mpi.engine()).isEqualTo("mpi-shm-1");
        assertThat(mpi.cohort()).isFalse();
        assertThat(mpi.world()).isEqualTo(2);
        assertThat(mpi.of("allreduce")).hasSize(6);
        Results.Row small = mpi.of("allreduce").get(0);
        assertThat(small.bytes()).isEqualTo(4096);
        assertThat(small.busbwGbs()).isEqualTo(1.043);
        assertThat(small.medianS()).isCloseTo(4096 / 1.043e9, within(1e-12)); // from algbw: more digits
        assertThat(mpi.of("broadcast"))
                .singleElement()
                .satisfies(r -> assertThat(r.bytes()).isEqualTo(16L << 20));
        assertThat(mpi.of("allgather"))
                .singleElement()
                .satisfies(r -> assertThat(r.medianS()).isCloseTo(2 * (16 << 20) / 10.021e9, within(1e-9)));
        assertThat(mpi.of("barrier"))
                .singleElement()
                .satisfies(r -> assertThat(r.bytes()).isZero());
    }

    @Test
    void drawsEveryEngineBesideThePeersAsOnePng() throws IOException {
        Path png = dir.resolve("charts/sitting.png");
        Run run = bench(
                "chart",
                "--out",
                png.toString(),
                "--title",
                "a sitting",
                fixture("shm-copy-1.json").toString(),
                fixture("gloo-1.json").toString(),
                fixture("torch-gloo-1.json").toString(),
                "Open MPI shm=" + fixture("mpi-shm-1.txt"),
                "Open MPI TCP=" + fixture("mpi-tcp-1.txt"));
        assertThat(run.code).as(run.err).isZero();
        assertThat(run.out).contains("chart written to " + png);
        assertIsPng(png, BenchChart.WIDTH, BenchChart.HEIGHT);
    }

    @Test
    void labelsComeFromTheEngineOrTheCommandLineAndRepeatsAreNumberedOrCombined() throws IOException {
        List<BenchChart.Series> series = List.of(
                BenchChart.Series.of(fixture("shm-copy-1.json").toString()),
                BenchChart.Series.of(fixture("shm-copy-2.json").toString()),
                BenchChart.Series.of("MPI=" + fixture("mpi-shm-1.txt")));
        assertThat(series).extracting(BenchChart.Series::label).containsExactly("cohort-shm", "cohort-shm", "MPI");
        assertThat(series.get(2).rows()).allMatch(r -> r.op().equals("allreduce"));

        assertThat(BenchChart.distinct(series))
                .extracting(BenchChart.Series::label)
                .containsExactly("cohort-shm #1", "cohort-shm #2", "MPI");

        List<BenchChart.Series> medians = BenchChart.medians(series);
        assertThat(medians).extracting(BenchChart.Series::label).containsExactly("cohort-shm", "MPI");
        BenchChart.Series shm = medians.get(0);
        assertThat(shm.cohort()).isTrue();
        assertThat(shm.rows()).hasSize(4);
        double first = series.get(0).rows().get(0).busbwGbs();
        double second = series.get(1).rows().get(0).busbwGbs();
        assertThat(shm.rows().get(0).busbwGbs()).isCloseTo((first + second) / 2, within(1e-12)); // two rounds
        assertThat(BenchChart.median(new double[] {3, 1, 2})).isEqualTo(2);

        Path png = dir.resolve("median.png");
        Run run = bench(
                "chart",
                "--median",
                "--out",
                png.toString(),
                fixture("shm-copy-1.json").toString(),
                fixture("shm-copy-2.json").toString(),
                fixture("torch-gloo-1.json").toString());
        assertThat(run.code).as(run.err).isZero();
        assertIsPng(png, BenchChart.WIDTH, BenchChart.HEIGHT);
    }

    @Test
    void aFileThatIsNoResultIsBadInputNamingIt() throws IOException {
        Path notes = Files.writeString(dir.resolve("notes.txt"), "nothing measured here\n");
        Run run = bench("chart", "--out", dir.resolve("x.png").toString(), notes.toString());
        assertThat(run.code).isEqualTo(2);
        assertThat(run.err).contains(notes + ": neither a JSON result nor mpi_allreduce.py's table");

        Path train = Files.writeString(dir.resolve("train.json"), "{\"samples_per_s\": 5000}");
        run = bench("chart", "--out", dir.resolve("x.png").toString(), train.toString());
        assertThat(run.code).isEqualTo(2);
        assertThat(run.err).contains(train + ": no \"results\" array");

        run = bench(
                "chart",
                "--out",
                dir.resolve("x.png").toString(),
                dir.resolve("missing.json").toString());
        assertThat(run.code).isEqualTo(2);
        assertThat(run.err).contains("no result file " + dir.resolve("missing.json"));
        assertThat(dir.resolve("x.png")).doesNotExist();
    }

    @Test
    void theChartOfAResultSitsBesideIt() {
        assertThat(BenchChart.pngFor(Path.of("out/x.json"))).isEqualTo(Path.of("out/x.png"));
        assertThat(BenchChart.pngFor(Path.of("result"))).isEqualTo(Path.of("result.png"));
        assertThat(new BenchChart.SizeFormat().format(12)).isEqualTo("4 KiB");
        assertThat(new BenchChart.SizeFormat().format(24)).isEqualTo("16 MiB");
        assertThat(new BenchChart.SizeFormat().format(2)).isEqualTo("4 B");
    }

    /** A collectives run on the threads engine writes its JSON and the chart beside it. */
    @Test
    void collectivesWritesItsChartBesideItsJson() throws IOException {
        Path json = dir.resolve("threads.json");
        Run run = bench(BenchJvm.words(
                "collectives --backend threads --world 2 --sizes 4K,64K --warmup-ms 0 --json", json.toString()));
        assertThat(run.code).as(run.err).isZero();
        assertThat(json).exists();
        assertIsPng(dir.resolve("threads.png"), BenchChart.WIDTH, BenchChart.HEIGHT);

        Path quiet = dir.resolve("quiet.json");
        run = bench(BenchJvm.words(
                "collectives --backend threads --world 2 --sizes 4K --warmup-ms 0 --json",
                quiet.toString(),
                "--no-chart"));
        assertThat(run.code).as(run.err).isZero();
        assertThat(quiet).exists();
        assertThat(dir.resolve("quiet.png")).doesNotExist();
    }

    private record Run(int code, String out, String err) {}

    /** Runs {@code cohort bench ARGS} in this JVM, capturing what it prints. */
    private static Run bench(String... args) {
        CommandLine cli = BenchMain.command();
        StringWriter err = new StringWriter();
        cli.setErr(new PrintWriter(err, true));
        for (CommandLine sub : cli.getSubcommands().values()) {
            sub.setErr(new PrintWriter(err, true));
        }
        java.io.PrintStream stdout = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code;
        synchronized (BenchChartTest.class) {
            System.setOut(new java.io.PrintStream(out, true, StandardCharsets.UTF_8));
            try {
                code = cli.execute(args);
            } finally {
                System.setOut(stdout);
            }
        }
        return new Run(code, out.toString(StandardCharsets.UTF_8), err.toString());
    }

    static void assertIsPng(Path file, int width, int height) throws IOException {
        assertThat(Files.readAllBytes(file)).startsWith(0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n');
        BufferedImage image = ImageIO.read(file.toFile());
        assertThat(image.getWidth()).isEqualTo(width);
        assertThat(image.getHeight()).isEqualTo(height);
    }
}
