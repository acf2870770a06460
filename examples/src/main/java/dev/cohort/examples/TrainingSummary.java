package dev.cohort.examples;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Locale;
import java.util.stream.Collectors;

/**
 * How a training run went, as printed at the end and written by {@code --json}.
 *
 * @param model            mlp or cnn
 * @param backend          the distributed backend's name
 * @param workers          the number of workers
 * @param epochs           epochs trained, counting from the start of training (fractional when
 *                         {@code --max-steps} stopped mid-epoch)
 * @param steps            optimizer steps taken, counting from the start of training
 * @param globalBatchSize  examples per step over all workers
 * @param testAccuracy     accuracy on the whole test set at the end
 * @param epochAccuracies  test accuracy after each epoch this run finished
 * @param finalLoss        the training loss of the last step, averaged over workers
 * @param samplesPerSecond training examples per second over all workers (training time only)
 * @param seconds          wall time of this run: training and evaluation
 * @param resumedFromStep  the step of the checkpoint this run resumed from (0 when it started afresh)
 * @param stepsRedone      steps executed more than once because the run was interrupted (a restart
 *                         of the group, or a new launch with {@code --resume}): every execution of a
 *                         step after its first counts once. After one crash it is the step reached
 *                         before the crash minus the step of the checkpoint resumed from. Known from
 *                         the progress marker kept next to the checkpoints ({@link ProgressMarker});
 *                         {@link #UNKNOWN} when the group was restarted without {@code --checkpoint-dir}
 * @param restarts         how often the launcher had restarted the group before this run
 *                         ({@code COHORT_RESTART_COUNT}; 0 outside the launcher)
 */
public record TrainingSummary(String model, String backend, int workers, double epochs, long steps,
                              int globalBatchSize, double testAccuracy, List<Double> epochAccuracies,
                              double finalLoss, double samplesPerSecond, double seconds, long resumedFromStep,
                              long stepsRedone, int restarts) {

    /** {@link #stepsRedone} when it cannot be known. */
    public static final long UNKNOWN = -1;

    public TrainingSummary {
        epochAccuracies = List.copyOf(epochAccuracies);
    }

    /** One JSON object; the fields the issue names first. */
    public String toJson() {
        return "{\n"
                + "  \"workers\": " + workers + ",\n"
                + "  \"epochs\": " + number(epochs) + ",\n"
                + "  \"test_accuracy\": " + number(testAccuracy) + ",\n"
                + "  \"samples_per_s\": " + number(samplesPerSecond) + ",\n"
                + "  \"seconds\": " + number(seconds) + ",\n"
                + "  \"model\": \"" + model + "\",\n"
                + "  \"backend\": \"" + backend + "\",\n"
                + "  \"steps\": " + steps + ",\n"
                + "  \"global_batch_size\": " + globalBatchSize + ",\n"
                + "  \"final_loss\": " + number(finalLoss) + ",\n"
                + "  \"resumed_from_step\": " + resumedFromStep + ",\n"
                + "  \"steps_redone\": " + (stepsRedone == UNKNOWN ? "null" : Long.toString(stepsRedone)) + ",\n"
                + "  \"restarts\": " + restarts + ",\n"
                + "  \"epoch_test_accuracy\": ["
                + epochAccuracies.stream().map(TrainingSummary::number).collect(Collectors.joining(", ")) + "]\n"
                + "}\n";
    }

    /** Writes {@link #toJson()} to {@code file} (through a temporary file and a rename). */
    public void writeJson(Path file) throws IOException {
        Path abs = file.toAbsolutePath();
        Files.createDirectories(abs.getParent());
        Path tmp = abs.resolveSibling(abs.getFileName() + ".tmp");
        Files.writeString(tmp, toJson());
        Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** The lines printed at the end of training. */
    public String describe() {
        return String.format(Locale.ROOT, "done: %s, %d worker(s) on %s, %s epoch(s), %d steps of %d examples%n"
                        + "test accuracy %.4f, final loss %.4f, %.0f samples/s, %.1f s%n"
                        + "restarts %d, resumed from step %d, steps redone %s",
                model, workers, backend, number(epochs), steps, globalBatchSize, testAccuracy, finalLoss,
                samplesPerSecond, seconds, restarts, resumedFromStep,
                stepsRedone == UNKNOWN ? "unknown (no --checkpoint-dir)" : Long.toString(stepsRedone));
    }

    private static String number(double x) {
        if (!Double.isFinite(x)) {
            return "null";
        }
        if (x == Math.rint(x) && Math.abs(x) < 1e15) {
            return Long.toString((long) x);
        }
        return String.format(Locale.ROOT, "%.6g", x).replaceFirst("(\\.\\d*?)0+(e|$)", "$1$2").replaceFirst("\\.(e|$)", "$1");
    }
}
