package dev.cohort.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Locale;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/**
 * A collectives result file, whoever wrote it: the JSON of {@code cohort bench collectives} and
 * torch_collectives.py ({@code {"engine", "version", "world", "results": [{"op", "bytes",
 * "median_s", "busbw_gbs", ...}]}}), or the table mpi_allreduce.py prints (which bench-sitting.sh
 * keeps as {@code mpi-*.txt}).
 */
final class Results {

    private static final ObjectMapper JSON = new ObjectMapper();
    /** mpi_allreduce.py's first line ends with the number of ranks: {@code ..., np=2}. */
    private static final Pattern MPI_WORLD = Pattern.compile("np=(\\d+)");
    /** A row of its table: op, size ("4 KiB" or "-"), iters, median and min in ms, algbw and busbw in GB/s. */
    private static final Pattern MPI_ROW = Pattern.compile(
            "(\\S+)\\s+(-|\\d+ [KMG]iB)\\s+\\d+\\s+([\\d.]+)ms\\s+[\\d.]+ms\\s+([\\d.]+)\\s+([\\d.]+)\\s*");

    private Results() {}

    /**
     * One measurement.
     *
     * @param op      allreduce, broadcast, allgather or barrier (lower case)
     * @param bytes   the size (per rank for allgather; 0 for barrier)
     * @param medianS the median time in seconds
     * @param busbwGbs bus bandwidth in GB/s (0 for barrier)
     */
    record Row(String op, long bytes, double medianS, double busbwGbs) {}

    /**
     * One file's results.
     *
     * @param engine what measured them: the JSON's {@code engine}, or the file's name
     * @param cohort whether Cohort measured them (its engines are called {@code cohort-*}), not a peer
     * @param world  the number of ranks (0 when the file does not say)
     */
    record Result(Path file, String engine, boolean cohort, int world, List<Row> rows) {

        /** The rows of {@code op}, in file order. */
        List<Row> of(String op) {
            return rows.stream().filter(r -> r.op().equals(op)).toList();
        }
    }

    /**
     * Reads {@code file}.
     *
     * @throws IllegalArgumentException naming the file, when it is neither kind of result
     * @throws IOException              when it cannot be read
     */
    static Result read(Path file) throws IOException {
        String text = Files.readString(file);
        return text.stripLeading().startsWith("{") ? fromJson(file, text) : fromMpiTable(file, text);
    }

    private static Result fromJson(Path file, String text) {
        JsonNode root;
        try {
            root = JSON.readTree(text);
        } catch (JsonProcessingException e) {
            throw new IllegalArgumentException(file + ": not JSON (" + e.getOriginalMessage() + ")");
        }
        JsonNode results = root.path("results");
        if (!results.isArray()) {
            throw new IllegalArgumentException(file + ": no \"results\" array; not a collectives result "
                    + "(cohort bench collectives --json, torch_collectives.py --out)");
        }
        List<Row> rows = new ArrayList<>();
        for (JsonNode r : results) {
            if (!r.path("op").isTextual()
                    || !r.path("bytes").isNumber()
                    || !r.path("median_s").isNumber()) {
                throw new IllegalArgumentException(file + ": a result without op, bytes and median_s: " + r);
            }
            rows.add(new Row(
                    r.get("op").asText().toLowerCase(Locale.ROOT),
                    r.get("bytes").asLong(),
                    r.get("median_s").asDouble(),
                    r.path("busbw_gbs").asDouble(0)));
        }
        String engine = root.path("engine").asText(stem(file));
        return new Result(
                file, engine, engine.startsWith("cohort"), root.path("world").asInt(0), rows);
    }

    /** mpi_allreduce.py's table; the median from algbw, which has more digits than the milliseconds. */
    private static Result fromMpiTable(Path file, String text) {
        int world = 0;
        List<Row> rows = new ArrayList<>();
        for (String line : text.split("\n")) {
            Matcher n = MPI_WORLD.matcher(line);
            if (n.find()) {
                world = Integer.parseInt(n.group(1));
            }
            Matcher m = MPI_ROW.matcher(line);
            if (!m.matches()) {
                continue;
            }
            String op = switch (m.group(1).toLowerCase(Locale.ROOT)) {
                case "bcast" -> "broadcast";
                case "allgather(per-rank)" -> "allgather";
                default -> m.group(1).toLowerCase(Locale.ROOT);
            };
            long bytes = m.group(2).equals("-") ? 0 : parseSize(m.group(2));
            double ms = Double.parseDouble(m.group(3));
            double algbw = Double.parseDouble(m.group(4));
            double busbw = Double.parseDouble(m.group(5));
            long moved = op.equals("allgather") ? Math.max(world, 1) * bytes : bytes;
            rows.add(new Row(op, bytes, algbw > 0 ? moved / algbw / 1e9 : ms / 1e3, busbw));
        }
        if (rows.isEmpty()) {
            throw new IllegalArgumentException(file + ": neither a JSON result nor mpi_allreduce.py's table");
        }
        return new Result(file, stem(file), false, world, rows);
    }

    private static long parseSize(String text) {
        String[] parts = text.split(" ");
        long unit = switch (parts[1]) {
            case "KiB" -> Sizes.KIB;
            case "MiB" -> Sizes.MIB;
            default -> 1024 * Sizes.MIB;
        };
        return Long.parseLong(parts[0]) * unit;
    }

    /** The file's name without its extension. */
    static String stem(Path file) {
        String name = file.getFileName().toString();
        int dot = name.lastIndexOf('.');
        return dot > 0 ? name.substring(0, dot) : name;
    }
}
