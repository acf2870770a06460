package dev.cohort.examples;

import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.SerializationFeature;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.Locale;

/**
 * How a training run went, as printed at the end and written by {@code --json}.
 *
 * @param model            mlp or cnn
 * @param framework        what trained it: torch (JavaCPP's PyTorch) or djl (DJL's PyTorch engine)
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
 * @param epochDetails     each epoch trained, in order: those this run trained (in part, when it
 *                         resumed mid-epoch or {@code --max-steps} stopped it), after those that the
 *                         checkpoint it resumed from had finished ({@link EpochHistory})
 */
public record TrainingSummary(
        String model,
        String framework,
        String backend,
        int workers,
        double epochs,
        long steps,
        int globalBatchSize,
        double testAccuracy,
        List<Double> epochAccuracies,
        double finalLoss,
        double samplesPerSecond,
        double seconds,
        long resumedFromStep,
        long stepsRedone,
        int restarts,
        List<EpochResult> epochDetails) {

    /** {@link #stepsRedone} when it cannot be known. */
    public static final long UNKNOWN = -1;

    private static final ObjectMapper JSON = new ObjectMapper().enable(SerializationFeature.INDENT_OUTPUT);

    public TrainingSummary {
        epochAccuracies = List.copyOf(epochAccuracies);
        epochDetails = List.copyOf(epochDetails);
    }

    /**
     * One epoch of training as this run saw it.
     *
     * @param epoch            the epoch's number, from 1
     * @param epochsDone       epochs trained at its end, counting from the start of training
     *                         (fractional when it stopped mid-epoch)
     * @param steps            the steps this run took in it
     * @param examples         the training examples of those steps over all workers (padding included)
     * @param trainLoss        the mean training loss of those steps, averaged over workers
     * @param testAccuracy     accuracy on the whole test set at its end
     * @param samplesPerSecond training examples per second over all workers in it (training only)
     * @param seconds          its training time
     */
    public record EpochResult(
            int epoch,
            double epochsDone,
            long steps,
            long examples,
            double trainLoss,
            double testAccuracy,
            double samplesPerSecond,
            double seconds) {}

    /** One JSON object; the fields the issue names first, then the rest and {@code epochs_detail}. */
    public String toJson() {
        ObjectNode root = JSON.createObjectNode();
        root.put("workers", workers);
        number(root, "epochs", epochs);
        number(root, "test_accuracy", testAccuracy);
        number(root, "samples_per_s", samplesPerSecond);
        number(root, "seconds", seconds);
        root.put("model", model);
        root.put("framework", framework);
        root.put("backend", backend);
        root.put("steps", steps);
        root.put("global_batch_size", globalBatchSize);
        number(root, "final_loss", finalLoss);
        root.put("resumed_from_step", resumedFromStep);
        if (stepsRedone == UNKNOWN) {
            root.putNull("steps_redone");
        } else {
            root.put("steps_redone", stepsRedone);
        }
        root.put("restarts", restarts);
        ArrayNode accuracies = root.putArray("epoch_test_accuracy");
        epochAccuracies.forEach(accuracies::add);
        ArrayNode details = root.putArray("epochs_detail");
        for (EpochResult e : epochDetails) {
            ObjectNode d = details.addObject();
            d.put("epoch", e.epoch());
            number(d, "epochs_done", e.epochsDone());
            d.put("steps", e.steps());
            d.put("examples", e.examples());
            number(d, "train_loss", e.trainLoss());
            number(d, "test_accuracy", e.testAccuracy());
            number(d, "samples_per_s", e.samplesPerSecond());
            number(d, "seconds", e.seconds());
        }
        try {
            return JSON.writeValueAsString(root) + "\n";
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
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
        return String.format(
                Locale.ROOT,
                "done: %s (%s), %d worker(s) on %s, %s epoch(s), %d steps of %d examples%n"
                        + "test accuracy %.4f, final loss %.4f, %.0f samples/s, %.1f s%n"
                        + "restarts %d, resumed from step %d, steps redone %s",
                model,
                framework,
                workers,
                backend,
                readable(epochs),
                steps,
                globalBatchSize,
                testAccuracy,
                finalLoss,
                samplesPerSecond,
                seconds,
                restarts,
                resumedFromStep,
                stepsRedone == UNKNOWN ? "unknown (no --checkpoint-dir)" : Long.toString(stepsRedone));
    }

    /** JSON has no NaN or infinity: those are null. */
    private static void number(ObjectNode node, String name, double x) {
        if (Double.isFinite(x)) {
            node.put(name, x);
        } else {
            node.putNull(name);
        }
    }

    private static String readable(double x) {
        if (x == Math.rint(x) && Math.abs(x) < 1e15) {
            return Long.toString((long) x);
        }
        return String.format(Locale.ROOT, "%.6g", x)
                .replaceFirst("(\\.\\d*?)0+(e|$)", "$1$2")
                .replaceFirst("\\.(e|$)", "$1");
    }
}
