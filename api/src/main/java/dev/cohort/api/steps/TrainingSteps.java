package dev.cohort.api.steps;

import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;

/**
 * The training steps of this process's training threads, as the integrations mark them: a step
 * takes its batch ({@link Part#DATA}, marked by the loaders), computes (forward and backward: the
 * time in no part, split where the integrations mark backward's start), averages the gradients
 * and runs the optimizer (marked by the distributed optimizer), and ends with {@link #stepEnded}.
 * Each step goes to the {@link Observer}s (metrics, the metrics file) and, where a recording
 * enables them, to JDK Flight Recorder as a {@value StepEvent#NAME} event with its parts as
 * {@value StepPartEvent#NAME} events.
 *
 * <p>Each thread keeps its own step, so ranks on threads of one process (the threads engine) do
 * not mix. A step starts when it takes its batch, or, where no loader marks that, when the
 * previous step of its thread ended: the time between a step's end and the next batch
 * (evaluation, checkpoints) counts in no step.
 */
public final class TrainingSteps {

    /** The parts of a step that are marked; the rest of the step is computing. */
    public enum Part {
        DATA("data wait"),
        AVERAGE("average gradients"),
        OPTIMIZER("optimizer step");

        private final String label;

        Part(String label) {
            this.label = label;
        }

        /** As the trace and the metrics name it. */
        public String label() {
            return label;
        }
    }

    /**
     * One finished step of one training thread, times in nanoseconds.
     *
     * @param rank    the rank that trained it
     * @param number  its number on this thread, from 0 (steps before a resume are not counted)
     * @param nanos   from taking its batch (or the previous step's end) to its end
     * @param samples the examples its batches held (0 where no loader marked them)
     * @param backwardNanos from backward's start ({@link #backwardStarted}) to the step's first
     *     averaging or optimizer part; 0 where nothing marked backward's start
     */
    public record Step(
            int rank,
            long number,
            long nanos,
            long samples,
            long dataNanos,
            long backwardNanos,
            long averageNanos,
            long optimizerNanos) {

        /** Forward and backward: the step's time outside its marked parts. */
        public long computeNanos() {
            return Math.max(0, nanos - dataNanos - averageNanos - optimizerNanos);
        }

        /** The step's computing before backward started (all of it where nothing marked backward). */
        public long forwardNanos() {
            return computeNanos() - backwardNanos;
        }

        /** This rank's examples per second in this step; 0 when no loader counted them. */
        public double samplesPerSecond() {
            return nanos <= 0 ? 0 : samples * 1e9 / nanos;
        }
    }

    /** What watches the steps (called on the training thread, so it must be quick). */
    public interface Observer {

        void stepEnded(Step step);

        /** An elastic job's worker moved to generation {@code generation} of its group. */
        default void reformed(int generation) {}
    }

    private static final List<Observer> OBSERVERS = new CopyOnWriteArrayList<>();
    private static final ThreadLocal<TrainingSteps> THREAD = ThreadLocal.withInitial(TrainingSteps::new);

    private long number;
    private long startNanos = System.nanoTime();
    /** Whether a part of the current step was marked. */
    private boolean started;

    private long samples;
    private long dataNanos;
    private long averageNanos;
    private long optimizerNanos;
    /** When backward started in this step, and when its first averaging or optimizer part began; -1: not yet. */
    private long backwardStart = -1;

    private long backwardEnd = -1;
    private StepEvent event = begun(new StepEvent());

    private TrainingSteps() {}

    /** Adds {@code observer}; closing the handle removes it. */
    public static AutoCloseable observe(Observer observer) {
        OBSERVERS.add(observer);
        return () -> OBSERVERS.remove(observer);
    }

    /** Starts timing {@code part} of this thread's current step; end it with {@link Timing#end}. */
    public static Timing begin(Part part) {
        return new Timing(THREAD.get(), part);
    }

    /** Ends this thread's current step, trained by {@code rank}; the next one starts now. */
    public static void stepEnded(int rank) {
        THREAD.get().end(rank);
    }

    /**
     * Backward has started in this thread's current step: the integrations call it from their
     * gradient hooks (the first call of a step counts), which splits the step's computing into
     * forward and backward.
     */
    public static void backwardStarted() {
        TrainingSteps steps = THREAD.get();
        if (steps.backwardStart < 0) {
            steps.backwardStart = System.nanoTime();
        }
    }

    /** Tells the observers that this worker moved to generation {@code generation} of an elastic group. */
    public static void reformed(int generation) {
        for (Observer o : OBSERVERS) {
            o.reformed(generation);
        }
    }

    /** A part of a step being timed. */
    public static final class Timing {
        private final TrainingSteps steps;
        private final Part part;
        private final long start;
        private final StepPartEvent event;

        private Timing(TrainingSteps steps, Part part) {
            this.steps = steps;
            this.part = part;
            this.start = System.nanoTime();
            steps.partStarts(part, start);
            StepPartEvent e = new StepPartEvent();
            if (e.isEnabled()) {
                e.part = part.label();
                e.begin();
            }
            this.event = e;
        }

        /** The part ended. */
        public void end() {
            end(0);
        }

        /** The part ended, having brought {@code samples} examples (a batch's size, for {@link Part#DATA}). */
        public void end(long samples) {
            steps.add(part, System.nanoTime() - start, samples);
            event.commit();
        }
    }

    private void partStarts(Part part, long now) {
        if (!started && part == Part.DATA) {
            startNanos = now; // the step starts with its batch, not when the previous one ended
            event.begin();
        }
        if (part != Part.DATA && backwardEnd < 0) {
            backwardEnd = now;
        }
        started = true;
    }

    private void add(Part part, long nanos, long batch) {
        switch (part) {
            case DATA -> dataNanos += nanos;
            case AVERAGE -> averageNanos += nanos;
            case OPTIMIZER -> optimizerNanos += nanos;
        }
        samples += batch;
    }

    private void end(int rank) {
        long now = System.nanoTime();
        long backward = backwardStart < 0 ? 0 : (backwardEnd < 0 ? now : backwardEnd) - backwardStart;
        long compute = Math.max(0, now - startNanos - dataNanos - averageNanos - optimizerNanos);
        Step step = new Step(
                rank,
                number,
                now - startNanos,
                samples,
                dataNanos,
                Math.max(0, Math.min(compute, backward)),
                averageNanos,
                optimizerNanos);
        if (event.isEnabled()) {
            event.rank = rank;
            event.step = step.number();
            event.samples = step.samples();
            event.dataWait = step.dataNanos();
            event.computing = step.computeNanos();
            event.forward = step.forwardNanos();
            event.backward = step.backwardNanos();
            event.averaging = step.averageNanos();
            event.optimizer = step.optimizerNanos();
            event.commit();
        }
        for (Observer o : OBSERVERS) {
            o.stepEnded(step);
        }
        number++;
        startNanos = now;
        started = false;
        samples = 0;
        dataNanos = 0;
        averageNanos = 0;
        optimizerNanos = 0;
        backwardStart = -1;
        backwardEnd = -1;
        event = begun(new StepEvent());
    }

    private static StepEvent begun(StepEvent e) {
        e.begin();
        return e;
    }
}
