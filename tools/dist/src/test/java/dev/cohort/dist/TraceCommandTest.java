package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import dev.cohort.metrics.MetricsFile;
import dev.cohort.runtime.flight.ClockOffsetEvent;
import dev.cohort.runtime.flight.CollectiveEvent;
import dev.cohort.runtime.flight.FlightRecorder;
import dev.cohort.runtime.flight.FlightRecords;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * {@code cohort run --trace DIR} records four ranks training with DDP on tcp, and {@code cohort
 * trace DIR} merges their recordings into one Chrome trace: the ranks as processes, the same
 * collectives on each, the steps and their parts, the JVM's GC pauses on their own track, the
 * clocks' offsets, and a table of where each rank's time went that names rank 1, stopped 60 ms of
 * every 100, as the one the others wait for; {@code --metrics-port} has rank 0 serve its meters,
 * scraped while it runs, and {@code --metrics-file} has it write a line a step.
 */
@Timeout(180)
class TraceCommandTest {

    @TempDir
    Path dir;

    private final Cli cli = new Cli();

    @Test
    void aTracedRunMergesIntoOneTraceOfEveryRankAndNamesTheSlowOne() throws Exception {
        Path trace = dir.resolve("trace");
        Path flight = dir.resolve("flight");
        int metricsPort = dev.cohort.runtime.FreePorts.pick(null);
        java.util.concurrent.FutureTask<Integer> run = new java.util.concurrent.FutureTask<>(() -> cli.run(
                "run",
                "--nproc-per-node",
                "4",
                "--metrics-port",
                Integer.toString(metricsPort),
                "--metrics-file",
                dir.resolve("steps.jsonl").toString(),
                "--trace",
                trace.toString(),
                "--flight-dir",
                flight.toString(),
                "--",
                "dev.cohort.bench.BenchMain",
                "train-worker",
                "--json",
                dir.resolve("train.json").toString(),
                "--backend",
                "tcp",
                "--steps",
                "60",
                "--warm",
                "2"));
        Thread launcher = new Thread(run, "launcher");
        launcher.setDaemon(true);
        launcher.start();
        String metrics = slowDown(flight.resolve(FlightRecorder.fileName(1)), run, metricsPort);
        assertThat(run.get(120, TimeUnit.SECONDS))
                .as("cohort run; %s%s", cli.out, cli.err)
                .isZero();

        assertThat(cli.run("trace", trace.toString())).as(cli.err.toString()).isZero();
        assertThat(cli.out.toString())
                .contains("merged 4 recording(s) of 4 rank(s) into " + trace.resolve("trace.json"))
                .containsPattern("(?m)^0 +62 +\\d+ +[0-9.]+ s +[0-9.]+ s")
                .containsPattern("(?m)^3 +62 +\\d+ +[0-9.]+ s +[0-9.]+ s")
                .contains("rank 1 computes longest between averagings (");
        // One clock on one host: the offset measured is within half the round trip it came from.
        java.util.regex.Matcher clock = java.util.regex.Pattern.compile(
                        "clocks against rank 0's, measured as the job joined and taken out of the trace: "
                                + "rank 0 \\+0\\.000 ms \\(± 0\\.000\\), rank 1 ([-+][0-9.]+) ms \\(± ([0-9.]+)\\)")
                .matcher(cli.out.toString());
        assertThat(clock.find()).as(cli.out.toString()).isTrue();
        assertThat(Math.abs(Double.parseDouble(clock.group(1))))
                .isLessThanOrEqualTo(Double.parseDouble(clock.group(2)) + 0.001);

        // --metrics-file: a line for each of rank 0's steps (2 warm-up and 60 timed), its parts within it.
        List<MetricsFile.Line> lines = MetricsFile.read(dir.resolve("steps.jsonl"));
        assertThat(lines).hasSize(62).allSatisfy(l -> {
            assertThat(l.rank()).isZero();
            assertThat(l.samples()).isEqualTo(64);
            assertThat(l.samplesPerS()).isPositive();
            assertThat(l.dataWaitS() + l.computingS() + l.averagingS() + l.optimizerS())
                    .isCloseTo(l.stepS(), org.assertj.core.data.Offset.offset(1e-6));
            assertThat(l.forwardS() + l.backwardS())
                    .isCloseTo(l.computingS(), org.assertj.core.data.Offset.offset(1e-6));
            assertThat(l.backwardS())
                    .as("the gradient hooks mark backward's start")
                    .isPositive();
            assertThat(l.averagingS()).isPositive();
        });
        assertThat(lines.get(61).step()).isEqualTo(61);

        JsonNode events = new ObjectMapper()
                .readTree(trace.resolve("trace.json").toFile())
                .get("traceEvents");
        Map<Integer, Set<String>> collectives = new HashMap<>();
        Map<Integer, List<String>> parts = new HashMap<>();
        Set<String> names = new HashSet<>();
        for (JsonNode e : events) {
            int rank = e.get("pid").asInt();
            String name = e.get("name").asText();
            if (e.get("ph").asText().equals("M")
                    && e.has("args")
                    && e.get("args").has("name")) {
                names.add(e.get("args").get("name").asText()); // a process's or a track's name
            }
            if (e.get("ph").asText().equals("X")) {
                assertThat(e.get("dur").asDouble()).isGreaterThanOrEqualTo(0);
                switch (e.get("cat").asText()) {
                    case "collective" ->
                        collectives.computeIfAbsent(rank, r -> new HashSet<>()).add(name);
                    case "step", "bucket" ->
                        parts.computeIfAbsent(rank, r -> new ArrayList<>()).add(name);
                    default -> {}
                }
            }
        }
        assertThat(collectives.keySet()).containsExactlyInAnyOrder(0, 1, 2, 3);
        // The clock exchange as the job joined: rank 1's pings (sends) and rank 0's answers; then the same collectives.
        assertThat(collectives.get(1)).contains("send #0", "recv #15");
        assertThat(collectives.get(0)).contains("recv #0", "send #15");
        collectives.values().forEach(calls -> calls.removeIf(n -> n.startsWith("send") || n.startsWith("recv")));
        assertThat(collectives.get(0)).hasSizeGreaterThan(20).isEqualTo(collectives.get(1));
        assertThat(collectives.get(0)).anyMatch(n -> n.matches("allreduce #\\d+"));
        assertThat(parts.get(1)).contains("data wait", "average gradients", "optimizer step", "step 61", "bucket 0");
        assertThat(names).contains("rank 0", "rank 1", "rank 2", "rank 3", "JVM: GC pauses, safepoints", "main");

        java.awt.image.BufferedImage chart =
                javax.imageio.ImageIO.read(trace.resolve("steps.png").toFile());
        assertThat(chart.getWidth()).isEqualTo(900);

        // Scraped while it ran (--metrics-port): rank 0's allreduces so far.
        assertThat(metrics)
                .containsPattern("cohort_collective_calls_total\\{kind=\"allreduce\",rank=\"0\"} [1-9]")
                .containsPattern("cohort_step_time_seconds_count\\{rank=\"0\"} \\d+")
                .containsPattern("cohort_step_part_time_seconds_count\\{part=\"backward\",rank=\"0\"} \\d+")
                .containsPattern("cohort_job_restarts\\{rank=\"0\"} 0")
                .contains("jvm_gc_");
    }

    /**
     * Stops rank 1 (from its flight record's pid) for 60 ms of every 100 until the run ends: the
     * rank the other waits for; meanwhile scrapes rank 0's metrics once, and returns them.
     */
    private static String slowDown(Path ring, java.util.concurrent.Future<Integer> run, int metricsPort)
            throws Exception {
        long pid = -1;
        String metrics = "";
        java.net.http.HttpClient http = java.net.http.HttpClient.newHttpClient();
        while (!run.isDone()) {
            long written = 0;
            if (metrics.isEmpty() && Files.exists(ring)) {
                try {
                    FlightRecords.Ring r = FlightRecords.read(ring);
                    written = r.written();
                    pid = written > 0 ? r.pid() : -1;
                } catch (IllegalArgumentException e) {
                    // Being made.
                }
            }
            if (written >= 60 && metrics.isEmpty()) { // past the clock exchange and the broadcasts: training
                try {
                    metrics = http.send(
                                    java.net.http.HttpRequest.newBuilder(
                                                    java.net.URI.create("http://127.0.0.1:" + metricsPort + "/metrics"))
                                            .timeout(java.time.Duration.ofSeconds(5))
                                            .build(),
                                    java.net.http.HttpResponse.BodyHandlers.ofString())
                            .body();
                } catch (java.io.IOException e) {
                    // Not serving yet.
                }
            }
            if (pid > 0 && ProcessHandle.of(pid).isPresent()) {
                new ProcessBuilder("kill", "-STOP", Long.toString(pid)).start().waitFor();
                Thread.sleep(60);
                new ProcessBuilder("kill", "-CONT", Long.toString(pid)).start().waitFor();
                Thread.sleep(40);
            } else {
                Thread.sleep(50);
            }
        }
        return metrics;
    }

    /** A recording whose rank's clock stands 10 s ahead of rank 0's: its times come back by 10 s. */
    @Test
    void aRanksClockOffsetIsTakenOutOfItsTimes() throws Exception {
        Path recorded = dir.resolve("rank-1.jfr");
        try (jdk.jfr.Recording recording = new jdk.jfr.Recording()) {
            recording.enable(ClockOffsetEvent.NAME);
            recording.enable(CollectiveEvent.NAME).withThreshold(java.time.Duration.ZERO);
            recording.start();
            ClockOffsetEvent offset = new ClockOffsetEvent();
            offset.rank = 1;
            offset.offset = TimeUnit.SECONDS.toNanos(10);
            offset.roundTrip = TimeUnit.MICROSECONDS.toNanos(80);
            offset.commit();
            CollectiveEvent call = new CollectiveEvent();
            call.begin();
            call.rank = 1;
            call.kind = "allreduce";
            call.sequence = 7;
            call.type = "float32";
            call.commit();
            recording.stop();
            recording.dump(recorded);
        }
        java.time.Instant issued = jdk.jfr.consumer.RecordingFile.readAllEvents(recorded).stream()
                .filter(e -> e.getEventType().getName().equals(CollectiveEvent.NAME))
                .findFirst()
                .orElseThrow()
                .getStartTime();

        assertThat(cli.run("trace", dir.toString())).as(cli.err.toString()).isZero();
        assertThat(cli.out.toString()).contains("taken out of the trace: rank 1 +10000.000 ms (± 0.040)");
        JsonNode allreduce = null;
        for (JsonNode e :
                new ObjectMapper().readTree(dir.resolve("trace.json").toFile()).get("traceEvents")) {
            if (e.get("name").asText().equals("allreduce #7")) {
                allreduce = e;
            }
        }
        assertThat(allreduce).isNotNull();
        double micros = issued.getEpochSecond() * 1e6 + issued.getNano() / 1e3;
        assertThat(allreduce.get("ts").asDouble()).isCloseTo(micros - 10e6, org.assertj.core.data.Offset.offset(1.0));
    }

    @Test
    void aFolderWithoutRecordingsIsAnError() {
        assertThat(cli.run("trace", dir.toString())).isEqualTo(1);
        assertThat(cli.err.toString()).contains(dir + " holds no recording (.jfr)");
    }
}
