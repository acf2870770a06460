package dev.cohort.dist;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import dev.cohort.runtime.flight.ClockOffsetEvent;
import dev.cohort.runtime.flight.CollectiveEvent;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.TreeMap;
import java.util.concurrent.Callable;
import jdk.jfr.consumer.RecordedEvent;
import jdk.jfr.consumer.RecordedThread;
import jdk.jfr.consumer.RecordingFile;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;
import picocli.CommandLine.Spec;

/**
 * {@code cohort trace DIR}: the JFR recordings {@code cohort run --trace DIR} made, one per worker,
 * merged into one Chrome/Perfetto trace (ranks as processes, threads as tracks, the JVM's GC
 * pauses and safepoints on a track of their own), and a table of where each rank's time went.
 */
@Command(
        name = "trace",
        description = {
            "Merges the recordings of cohort run --trace DIR into one Chrome/Perfetto trace (open it in "
                    + "https://ui.perfetto.dev or chrome://tracing) and prints where each rank's time went.",
            "Exit status 1 when DIR holds no recording."
        })
final class TraceCommand implements Callable<Integer> {

    static final String STEP_PART = "dev.cohort.StepPart";
    static final String STEP = "dev.cohort.Step";
    static final String CHECKPOINT = "dev.cohort.Checkpoint";
    static final String BUCKET = "dev.cohort.GradientBucket";
    static final String REFORM = "dev.cohort.Reform";
    static final String GC_PAUSE = "jdk.GCPhasePause";
    static final String SAFEPOINT = "jdk.SafepointBegin";
    /** The track of a rank's GC pauses and safepoints. */
    static final long JVM_TRACK = 0;

    @Spec
    CommandSpec spec;

    @Parameters(paramLabel = "DIR", description = "the folder cohort run --trace wrote")
    Path dir;

    @Option(
            names = {"-o", "--output"},
            paramLabel = "FILE",
            description = "the merged trace (default: DIR/trace.json)")
    Path output;

    /** What one rank's recording holds, totalled. */
    static final class Totals {
        long collectives;
        Duration inCollectives = Duration.ZERO;
        Duration dataWait = Duration.ZERO;
        Duration computing = Duration.ZERO;
        Duration forward = Duration.ZERO;
        Duration backward = Duration.ZERO;
        Duration averaging = Duration.ZERO;
        Duration optimizer = Duration.ZERO;
        Duration gcPauses = Duration.ZERO;
        long steps;

        /** A training step: its parts as the step event carries them. */
        void step(RecordedEvent e) {
            steps++;
            dataWait = dataWait.plus(e.getDuration("dataWait"));
            computing = computing.plus(e.getDuration("computing"));
            forward = forward.plus(e.getDuration("forward"));
            backward = backward.plus(e.getDuration("backward"));
            averaging = averaging.plus(e.getDuration("averaging"));
            optimizer = optimizer.plus(e.getDuration("optimizer"));
        }
    }

    @Override
    public Integer call() throws IOException {
        var err = spec.commandLine().getErr();
        List<Path> recordings = new ArrayList<>();
        if (Files.isDirectory(dir)) {
            try (var files = Files.list(dir)) {
                files.filter(p -> p.toString().endsWith(".jfr")).sorted().forEach(recordings::add);
            }
        }
        if (recordings.isEmpty()) {
            err.println("cohort trace: " + dir + " holds no recording (.jfr); record one with cohort run --trace " + dir
                    + " -- ...");
            err.flush();
            return 1;
        }
        ObjectMapper json = new ObjectMapper();
        ArrayNode events = json.createArrayNode();
        Map<Integer, Totals> ranks = new TreeMap<>();
        Map<Integer, RecordedEvent> offsets = new TreeMap<>();
        int unknown = 1000;
        for (Path recording : recordings) {
            List<RecordedEvent> recorded = RecordingFile.readAllEvents(recording);
            int firstOfRecording = events.size();
            int rank = recorded.stream()
                    .filter(e -> e.getEventType().getName().equals(CollectiveEvent.NAME)
                            || e.getEventType().getName().equals(STEP))
                    .mapToInt(e -> e.getInt("rank"))
                    .findFirst()
                    .orElse(unknown++);
            Totals totals = ranks.computeIfAbsent(rank, r -> new Totals());
            events.add(metadata(
                    json,
                    "process_name",
                    rank,
                    JVM_TRACK,
                    rank < 1000 ? "rank " + rank : recording.getFileName().toString()));
            ObjectNode order = metadata(json, "process_sort_index", rank, JVM_TRACK, null);
            order.putObject("args").put("sort_index", rank);
            events.add(order);
            events.add(metadata(json, "thread_name", rank, JVM_TRACK, "JVM: GC pauses, safepoints"));
            Map<Long, String> threads = new TreeMap<>();
            for (RecordedEvent e : recorded) {
                String type = e.getEventType().getName();
                ObjectNode span;
                switch (type) {
                    case CollectiveEvent.NAME -> {
                        String group = e.getString("group");
                        span = span(
                                json,
                                e,
                                rank,
                                e.getString("kind") + " #" + e.getLong("sequence")
                                        + (group == null || group.equals("world") ? "" : " of " + group),
                                "collective");
                        span.putObject("args")
                                .put("engine", e.getString("engine"))
                                .put("queued ms", e.getDuration("queued").toNanos() / 1e6)
                                .put("on the wire ms", e.getDuration("wire").toNanos() / 1e6)
                                .put("bytes", e.getLong("bytes"))
                                .put("type", e.getString("type"))
                                .put("root or peer", e.getInt("peer"))
                                .put("failed", e.getBoolean("failed"));
                        totals.collectives++;
                        totals.inCollectives = totals.inCollectives.plus(e.getDuration());
                    }
                    case STEP_PART -> span = span(json, e, rank, e.getString("part"), "step");
                    case STEP -> {
                        span = span(json, e, rank, "step " + e.getLong("step"), "step");
                        span.putObject("args")
                                .put("samples", e.getLong("samples"))
                                .put("data wait ms", e.getDuration("dataWait").toNanos() / 1e6)
                                .put("forward ms", e.getDuration("forward").toNanos() / 1e6)
                                .put("backward ms", e.getDuration("backward").toNanos() / 1e6)
                                .put("averaging ms", e.getDuration("averaging").toNanos() / 1e6)
                                .put("optimizer ms", e.getDuration("optimizer").toNanos() / 1e6);
                        totals.step(e);
                    }
                    case BUCKET -> {
                        span = span(json, e, rank, "bucket " + e.getInt("bucket"), "bucket");
                        span.putObject("args")
                                .put("parameters", e.getInt("parameters"))
                                .put("bytes", e.getLong("bytes"))
                                .put("sent as", e.getString("wire"))
                                .put("started during backward", e.getBoolean("duringBackward"));
                    }
                    case CHECKPOINT -> {
                        span = span(json, e, rank, "checkpoint " + e.getString("action"), "checkpoint");
                        span.putObject("args").put("file", e.getString("file")).put("bytes", e.getLong("bytes"));
                    }
                    case REFORM -> {
                        span = span(
                                json,
                                e,
                                rank,
                                "re-form: generation " + e.getInt("from") + " to " + e.getInt("to"),
                                "elastic");
                        span.putObject("args").put("why", e.getString("why"));
                    }
                    case GC_PAUSE -> {
                        span = span(json, e, rank, "GC pause: " + e.getString("name"), "jvm");
                        span.put("tid", JVM_TRACK);
                        totals.gcPauses = totals.gcPauses.plus(e.getDuration());
                    }
                    case SAFEPOINT -> {
                        span = span(json, e, rank, "safepoint", "jvm");
                        span.put("tid", JVM_TRACK);
                    }
                    default -> span = null;
                }
                if (span != null) {
                    events.add(span);
                    RecordedThread t = e.getThread();
                    if (t != null && span.get("tid").asLong() != JVM_TRACK) {
                        threads.putIfAbsent(t.getJavaThreadId(), t.getJavaName());
                    }
                }
            }
            threads.forEach((id, name) -> events.add(metadata(json, "thread_name", rank, id, name)));
            Optional<RecordedEvent> clock = recorded.stream()
                    .filter(e -> e.getEventType().getName().equals(ClockOffsetEvent.NAME))
                    .findFirst();
            if (clock.isPresent()) {
                long offset = clock.get().getDuration("offset").toNanos();
                for (int i = firstOfRecording; i < events.size(); i++) {
                    ObjectNode e = (ObjectNode) events.get(i);
                    if (e.has("ts")) {
                        e.put("ts", e.get("ts").asDouble() - offset / 1000.0);
                    }
                }
                offsets.put(rank, clock.get());
            }
        }
        Path out = output != null ? output : dir.resolve("trace.json");
        ObjectNode trace = json.createObjectNode();
        trace.set("traceEvents", events);
        trace.put("displayTimeUnit", "ms");
        json.writeValue(out.toFile(), trace);
        var w = spec.commandLine().getOut();
        w.println("merged " + recordings.size() + " recording(s) of " + ranks.size() + " rank(s) into " + out
                + ": open it in https://ui.perfetto.dev or chrome://tracing");
        if (!offsets.isEmpty()) {
            w.println("clocks against rank 0's, measured as the job joined and taken out of the trace: "
                    + offsets.entrySet().stream()
                            .map(o -> String.format(
                                    Locale.ROOT,
                                    "rank %d %+.3f ms (± %.3f)",
                                    o.getKey(),
                                    o.getValue().getDuration("offset").toNanos() / 1e6,
                                    o.getValue().getDuration("roundTrip").toNanos() / 2e6))
                            .collect(java.util.stream.Collectors.joining(", ")));
        }
        w.println();
        w.println(String.format(
                Locale.ROOT,
                "%-6s %7s %12s %15s %10s %10s %16s %10s %10s",
                "rank",
                "steps",
                "collectives",
                "in collectives",
                "data wait",
                "computing",
                "averaging grads",
                "optimizer",
                "GC pauses"));
        ranks.forEach((rank, t) -> w.println(String.format(
                Locale.ROOT,
                "%-6s %7d %12d %15s %10s %10s %16s %10s %10s",
                rank < 1000 ? rank : "?",
                t.steps,
                t.collectives,
                seconds(t.inCollectives),
                seconds(t.dataWait),
                seconds(t.computing),
                seconds(t.averaging),
                seconds(t.optimizer),
                seconds(t.gcPauses))));
        w.println();
        w.println(slowest(ranks));
        Map<Integer, Map<String, Double>> steps = new TreeMap<>();
        ranks.forEach((rank, t) -> {
            if (rank < 1000 && t.steps > 0) {
                steps.put(rank, StepChart.parts(t));
            }
        });
        if (!steps.isEmpty()) {
            Path png = out.resolveSibling("steps.png");
            StepChart.write(steps, png);
            w.println("the average step of each rank, drawn: " + png);
        }
        w.flush();
        return 0;
    }

    /**
     * The rank the others wait for: the one that computes longest between its step parts (the
     * others wait for it while averaging), over 1.2 times the others' median; or that none stands out.
     */
    static String slowest(Map<Integer, Totals> ranks) {
        List<Map.Entry<Integer, Totals>> training = ranks.entrySet().stream()
                .filter(e -> e.getKey() < 1000 && e.getValue().steps > 0)
                .sorted(java.util.Comparator.comparing(e -> e.getValue().computing))
                .toList();
        if (training.size() < 2) {
            return "no steps of two ranks or more to compare (the integrations' steps record them)";
        }
        Map.Entry<Integer, Totals> most = training.get(training.size() - 1);
        List<Duration> others = training.subList(0, training.size() - 1).stream()
                .map(e -> e.getValue().computing)
                .toList();
        Duration median = others.get(others.size() / 2);
        if (most.getValue().computing.toNanos() > 1.2 * median.toNanos()) {
            return "rank " + most.getKey() + " computes longest between averagings ("
                    + seconds(most.getValue().computing) + " against the others' median of " + seconds(median)
                    + "): the others wait for it";
        }
        return "no rank stands out: each computes about as long as the others between averagings";
    }

    private static ObjectNode span(ObjectMapper json, RecordedEvent e, int rank, String name, String category) {
        ObjectNode span = json.createObjectNode();
        span.put("name", name);
        span.put("cat", category);
        span.put("ph", "X");
        span.put("ts", micros(e.getStartTime()));
        span.put("dur", Math.max(0, e.getDuration().toNanos()) / 1000.0);
        span.put("pid", rank);
        RecordedThread t = e.getThread();
        span.put("tid", t == null ? JVM_TRACK : t.getJavaThreadId());
        return span;
    }

    private static ObjectNode metadata(ObjectMapper json, String name, int rank, long tid, String value) {
        ObjectNode m = json.createObjectNode();
        m.put("name", name);
        m.put("ph", "M");
        m.put("pid", rank);
        m.put("tid", tid);
        if (value != null) {
            m.putObject("args").put("name", value);
        }
        return m;
    }

    private static double micros(Instant t) {
        return t.getEpochSecond() * 1e6 + t.getNano() / 1e3;
    }

    private static String seconds(Duration d) {
        return String.format(Locale.ROOT, "%.2f s", d.toNanos() / 1e9);
    }
}
