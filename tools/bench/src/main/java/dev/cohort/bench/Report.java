package dev.cohort.bench;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.PropertyNamingStrategies;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.annotation.JsonNaming;
import java.util.List;

/** The collectives benchmark's JSON (the shape of torch_collectives.py's) and its console table. */
final class Report {

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    @JsonNaming(PropertyNamingStrategies.SnakeCaseStrategy.class)
    record Row(String op, long bytes, int iters, double medianS, double minS, double algbwGbs, double busbwGbs) {

        static Row of(String op, long bytes, int iters, double[] medianMin, double algbw, double busFactor) {
            return new Row(op, bytes, iters, medianMin[0], medianMin[1], algbw, algbw * busFactor);
        }
    }

    record Document(String engine, String version, int world, List<Row> results) {}

    private Report() {}

    static String json(String engine, int world, List<Row> rows) {
        try {
            return JSON.writeValueAsString(new Document(engine, "java " + Runtime.version(), world, rows));
        } catch (JsonProcessingException e) {
            throw new IllegalStateException(e);
        }
    }

    static String table(String json) {
        Document d;
        try {
            d = JSON.readValue(json, Document.class);
        } catch (JsonProcessingException e) {
            throw new IllegalStateException("unreadable benchmark output: " + e.getMessage(), e);
        }
        StringBuilder s = new StringBuilder(String.format("%s (%s), world=%d%n", d.engine(), d.version(), d.world()));
        s.append(String.format(
                "%-12s%9s%6s%12s%12s%12s%12s%n", "op", "size", "iters", "median", "min", "algbw GB/s", "busbw GB/s"));
        for (Row r : d.results()) {
            s.append(String.format(
                    "%-12s%9s%6d%10.3fms%10.3fms%12.3f%12.3f%n",
                    r.op(),
                    Sizes.format(r.bytes()),
                    r.iters(),
                    r.medianS() * 1e3,
                    r.minS() * 1e3,
                    r.algbwGbs(),
                    r.busbwGbs()));
        }
        return s.toString();
    }
}
