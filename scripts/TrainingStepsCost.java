import dev.cohort.api.steps.TrainingSteps;

/**
 * What marking a training step costs (TrainingSteps): nanoseconds per step of a data wait, an
 * averaging and an optimizer part and the step's end, as the loaders and the distributed optimizer
 * mark them; with no observer and with one (what --metrics-port or --metrics-file add), JFR's
 * Cohort events off. Median of 7 runs of 1 M steps after a warm-up.
 *
 * Run: java -cp api/target/classes scripts/TrainingStepsCost.java
 */
public class TrainingStepsCost {
    static long seen;

    public static void main(String[] args) throws Exception {
        report("no observer", 1_000_000);
        try (AutoCloseable observing = TrainingSteps.observe(s -> seen += s.samples())) {
            report("one observer", 1_000_000);
        }
    }

    static void report(String what, int steps) {
        long[] ns = new long[7];
        run(steps); // warm-up
        for (int i = 0; i < ns.length; i++) {
            ns[i] = run(steps);
        }
        java.util.Arrays.sort(ns);
        System.out.printf("%s: %.1f ns per step (median of 7; min %.1f, max %.1f)%n",
                what, ns[3] / (double) steps, ns[0] / (double) steps, ns[6] / (double) steps);
    }

    static long run(int steps) {
        long t0 = System.nanoTime();
        for (int i = 0; i < steps; i++) {
            TrainingSteps.begin(TrainingSteps.Part.DATA).end(64);
            TrainingSteps.begin(TrainingSteps.Part.AVERAGE).end();
            TrainingSteps.begin(TrainingSteps.Part.OPTIMIZER).end();
            TrainingSteps.stepEnded(0);
        }
        return System.nanoTime() - t0;
    }
}
