package dev.cohort.bench;

import java.util.ArrayList;
import java.util.List;
import picocli.CommandLine.Option;

/**
 * What one training benchmark run trains and how: the options {@code bench train} takes and hands
 * on, unchanged, to each of its {@code train-worker} processes.
 */
final class TrainSettings {

    @Option(names = "--backend", description = "Engine of the workers. Default: ${DEFAULT-VALUE}.")
    String backend = "gloo";

    @Option(names = "--steps", description = "Timed steps. Default: ${DEFAULT-VALUE}.")
    int steps = 1000;

    @Option(names = "--warm", description = "Untimed warm-up steps. Default: ${DEFAULT-VALUE}.")
    int warm = 20;

    @Option(names = "--batch", description = "Batch per worker. Default: ${DEFAULT-VALUE}.")
    int batch = 64;

    @Option(names = "--hidden")
    int hidden = 1024;

    @Option(names = "--model")
    String model = "mlp";

    @Option(names = "--framework")
    String framework = "torch";

    @Option(names = "--overlap", negatable = true)
    Boolean overlap;

    @Option(names = "--engine-option", paramLabel = "OPTION")
    List<String> engineOptions = new ArrayList<>();

    @Option(names = "--grad-compression", paramLabel = "TYPE")
    String gradCompression = "none";

    @Option(names = "--zero", paramLabel = "STAGE")
    int zero = 0;

    @Option(names = "--precision", paramLabel = "fp32|bf16|fp16")
    String precision = "fp32";

    @Option(names = "--optimizer", paramLabel = "NAME")
    String optimizer = "sgd";

    @Option(names = "--sync-only")
    boolean syncOnly;

    /** Refuses values and combinations that cannot run, naming the option. */
    void check() {
        if (steps < 1 || warm < 0 || batch < 1 || hidden < 1) {
            throw new IllegalArgumentException("--steps, --batch and --hidden must be >= 1 and --warm >= 0");
        }
        if (!List.of("torch", "djl").contains(framework)) {
            throw new IllegalArgumentException("--framework must be torch or djl, got '" + framework + "'");
        }
        if (framework.equals("djl") && overlap != null && overlap) {
            throw new IllegalArgumentException("--overlap: DJL has no hook that fires as backward produces a gradient; "
                    + "with --framework djl gradients are averaged at the step");
        }
        if (!List.of("none", "bf16", "fp16").contains(gradCompression)) {
            throw new IllegalArgumentException(
                    "--grad-compression must be bf16, fp16 or none, got '" + gradCompression + "'");
        }
        if (zero < 0 || zero > 2) {
            throw new IllegalArgumentException("--zero must be 0, 1 or 2, got " + zero);
        }
        if (!List.of("fp32", "bf16", "fp16").contains(precision)) {
            throw new IllegalArgumentException("--precision must be fp32, bf16 or fp16, got '" + precision + "'");
        }
        if (!precision.equals("fp32") && (framework.equals("djl") || syncOnly)) {
            throw new IllegalArgumentException("--precision " + precision + " runs libtorch's autocast through the "
                    + "torch integration's optimizer: only with --framework torch and without --sync-only");
        }
        if (!List.of("sgd", "sgd-momentum", "adam").contains(optimizer)) {
            throw new IllegalArgumentException(
                    "--optimizer must be sgd, sgd-momentum or adam, got '" + optimizer + "'");
        }
        if (syncOnly && (framework.equals("djl") || zero != 0 || !gradCompression.equals("none") || overlap != null)) {
            throw new IllegalArgumentException(
                    "--sync-only distributes nothing: only with --framework torch and without "
                            + "--zero, --grad-compression and --overlap");
        }
        if (!List.of("mlp", "demo-mlp", "demo-cnn").contains(model)) {
            throw new IllegalArgumentException("--model must be mlp, demo-mlp or demo-cnn, got '" + model + "'");
        }
    }

    /** These settings as {@code train-worker} options. */
    List<String> asArgs() {
        List<String> args = new ArrayList<>(List.of(
                "--backend=" + backend,
                "--steps=" + steps,
                "--warm=" + warm,
                "--batch=" + batch,
                "--hidden=" + hidden,
                "--model=" + model,
                "--framework=" + framework,
                "--grad-compression=" + gradCompression,
                "--zero=" + zero,
                "--precision=" + precision,
                "--optimizer=" + optimizer));
        if (overlap != null) {
            args.add(overlap ? "--overlap" : "--no-overlap");
        }
        engineOptions.forEach(o -> args.add("--engine-option=" + o));
        if (syncOnly) {
            args.add("--sync-only");
        }
        return args;
    }
}
