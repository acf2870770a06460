package dev.cohort.spark;

import java.io.IOException;
import java.io.OutputStream;
import java.io.Serializable;
import java.util.Iterator;

/**
 * How a task hands its partition to its rank: writes the rows to the rank's standard input, which
 * the rank reads to its end ({@link CohortOnSpark#run(org.apache.spark.api.java.JavaRDD, SparkJob,
 * RankFeed)}). It travels to the executors with the stage, so it must be serializable.
 *
 * @param <T> the partition's elements
 */
@FunctionalInterface
public interface RankFeed<T> extends Serializable {

    /**
     * Writes {@code rows} to {@code rank}; the caller closes it afterwards.
     *
     * @throws IOException when the rank stops reading (it failed: its exit code and output say why)
     */
    void write(Iterator<T> rows, OutputStream rank) throws IOException;
}
