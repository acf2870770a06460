package dev.cohort.api.checkpoint;

/**
 * Where training stands: the next batch to run is batch {@code batchInEpoch} of epoch
 * {@code epoch}, and {@code step} optimizer steps have been taken in all.
 */
public record TrainingPosition(int epoch, int batchInEpoch, long step) {

    public TrainingPosition {
        if (epoch < 0 || batchInEpoch < 0 || step < 0) {
            throw new IllegalArgumentException(
                    "a training position is never negative: " + epoch + "/" + batchInEpoch + "/" + step);
        }
    }

    public static TrainingPosition start() {
        return new TrainingPosition(0, 0, 0);
    }
}
