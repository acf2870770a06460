package dev.cohort.spark;

import java.io.Serializable;
import java.util.List;

/**
 * What one rank of a stage left: its output, each line tagged {@code [rank R]}, and the bytes of the
 * file it wrote at {@value RankTask#RESULT_ENV} (empty when it wrote none). Travels with Java
 * serialization: Spark shuffles with Kryo, which cannot reach into the JDK's classes on JDK 17+
 * without {@code --add-opens}.
 */
public record RankResult(int rank, List<String> lines, byte[] result) implements Serializable {

    public RankResult {
        lines = List.copyOf(lines);
        result = result.clone();
    }

    @Override
    public byte[] result() {
        return result.clone();
    }
}
