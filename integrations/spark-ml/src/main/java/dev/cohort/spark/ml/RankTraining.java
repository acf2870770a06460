package dev.cohort.spark.ml;

import dev.cohort.api.checkpoint.TrainingPosition;
import java.nio.file.Path;

/**
 * One framework's side of a rank of a {@link CohortEstimator#fit} ({@link SparkRank} does the
 * rest: the shard, the backend, the history, when to checkpoint): the model, its optimizer and the
 * steps over the rank's shard. {@link TorchRankTraining} and {@link DjlRankTraining}.
 */
interface RankTraining extends AutoCloseable {

    /**
     * Trains one epoch: {@code steps} steps over the rank's shard, reshuffled for {@code epoch};
     * the learning rate follows the settings' schedule. Returns the sum of the steps' losses and
     * the number of rows predicted right, in that order.
     */
    double[] epoch(int epoch, long steps);

    /** Saves the model and optimizer at {@code position}, on rank 0. */
    void save(Path checkpoint, TrainingPosition position);

    /** Loads the model and optimizer a {@link #save} left; returns where it stood. */
    TrainingPosition load(Path checkpoint);

    /** The model's weights in the framework's own format, as {@link Inference} loads them. */
    byte[] weights();

    @Override
    void close();

    /** The learning rate at global step {@code step} of {@code stepsPerEpoch}-step epochs under the settings' schedule. */
    static double learningRate(TrainSettings settings, long step, long stepsPerEpoch) {
        if (!settings.lrSchedule().equals("linear")) {
            return settings.learningRate();
        }
        return settings.learningRate() * (1 - step / (double) (settings.epochs() * stepsPerEpoch));
    }
}
