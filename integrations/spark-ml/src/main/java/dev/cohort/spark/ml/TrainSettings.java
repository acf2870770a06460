package dev.cohort.spark.ml;

import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;

/**
 * What every rank of a {@link CohortEstimator#fit} needs to train, as the driver settled it: the
 * shape of the data and the estimator's parameters. Travels to the ranks as a JSON file.
 *
 * @param width          features per row
 * @param classes        classes (labels are 0 to classes - 1)
 * @param epochs         passes over each rank's shard
 * @param batchSize      rows per step on each rank
 * @param learningRate   the optimizer's learning rate
 * @param optimizer      {@code sgd} (momentum 0.9) or {@code adam}
 * @param lrSchedule     {@code constant}, or {@code linear}: down to 0 at the last step
 * @param framework      {@code torch} or {@code djl}
 * @param modelFactory   the model factory's class name, of the framework's kind
 * @param seed           seeds the model's initial weights and each rank's shuffle
 * @param checkpointDir  where rank 0 saves a checkpoint after each epoch and where a retried stage
 *                       resumes from; empty: none
 * @param shardInMemory  whether a rank keeps its rows in memory ({@code /dev/shm}) rather than on
 *                       local disk
 * @param threads        libtorch's compute threads per rank ({@code spark.task.cpus})
 */
public record TrainSettings(
        int width,
        int classes,
        int epochs,
        int batchSize,
        double learningRate,
        String optimizer,
        String lrSchedule,
        String framework,
        String modelFactory,
        long seed,
        String checkpointDir,
        boolean shardInMemory,
        int threads)
        implements Serializable {

    private static final ObjectMapper JSON = new ObjectMapper();

    /** These settings as JSON text (a rank's argument). */
    public String toJson() {
        try {
            return JSON.writeValueAsString(this);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the training settings", e);
        }
    }

    /** The settings {@code json} holds. */
    public static TrainSettings fromJson(String json) {
        try {
            return JSON.readValue(json, TrainSettings.class);
        } catch (IOException e) {
            throw new UncheckedIOException("these are not a fit's training settings: " + json, e);
        }
    }
}
