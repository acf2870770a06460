package dev.cohort.metrics;

import dev.cohort.api.LaunchEnvironment;
import dev.cohort.api.steps.TrainingSteps;
import io.micrometer.core.instrument.Counter;
import io.micrometer.core.instrument.Gauge;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.Timer;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.concurrent.TimeUnit;

/**
 * Micrometer meters of a rank's training steps, as the integrations mark them ({@link
 * TrainingSteps}): step time ({@code cohort.step.time}) and its parts ({@code cohort.step.part.time},
 * tagged {@code part}: data wait, forward, backward, average gradients, optimizer step), examples trained
 * ({@code cohort.step.samples}; its rate is samples/s) and the last step's samples/s ({@code
 * cohort.step.samples.rate}), and the job's restarts ({@code cohort.job.restarts}) and elastic
 * re-forms ({@code cohort.job.reforms}); tagged {@code rank}. Close it to stop watching.
 *
 * <pre>{@code
 * StepMeters meters = new StepMeters(backend.rank(), 0);
 * meters.bindTo(registry);   // the program's own MeterRegistry
 * }</pre>
 */
public final class StepMeters implements MeterBinder, AutoCloseable {

    private final int rank;
    private final int restarts;
    private Timer step;
    private Timer data;
    private Timer forward;
    private Timer backward;
    private Timer average;
    private Timer optimizer;
    private Counter samples;
    private Counter reforms;
    private volatile double lastRate;
    private AutoCloseable observing;

    /**
     * The meters of {@code rank}'s steps, in a run the launcher has restarted {@code restarts} times
     * ({@link LaunchEnvironment#RESTART_COUNT}).
     */
    public StepMeters(int rank, int restarts) {
        this.rank = rank;
        this.restarts = restarts;
    }

    @Override
    public synchronized void bindTo(MeterRegistry registry) {
        if (observing != null) {
            throw new IllegalStateException("these step meters are bound already; make one per registry");
        }
        Tags tags = Tags.of("rank", Integer.toString(rank));
        step = Timer.builder("cohort.step.time")
                .description("a training step, from taking its batch to the optimizer's step")
                .tags(tags)
                .register(registry);
        data = partTimer(registry, tags, TrainingSteps.Part.DATA.label());
        forward = partTimer(registry, tags, "forward");
        backward = partTimer(registry, tags, "backward");
        average = partTimer(registry, tags, TrainingSteps.Part.AVERAGE.label());
        optimizer = partTimer(registry, tags, TrainingSteps.Part.OPTIMIZER.label());
        samples = Counter.builder("cohort.step.samples")
                .description("examples this rank trained on (as its loader counted them)")
                .tags(tags)
                .register(registry);
        Gauge.builder("cohort.step.samples.rate", this, m -> m.lastRate)
                .description("this rank's examples per second in its last step")
                .tags(tags)
                .register(registry);
        Gauge.builder("cohort.job.restarts", this, m -> m.restarts)
                .description("how often the launcher restarted the job's workers")
                .tags(tags)
                .register(registry);
        reforms = Counter.builder("cohort.job.reforms")
                .description("elastic re-forms of the group this worker went through")
                .tags(tags)
                .register(registry);
        observing = TrainingSteps.observe(new TrainingSteps.Observer() {
            @Override
            public void stepEnded(TrainingSteps.Step s) {
                if (s.rank() == rank) {
                    record(s);
                }
            }

            @Override
            public void reformed(int generation) {
                reforms.increment();
            }
        });
    }

    private static Timer partTimer(MeterRegistry registry, Tags tags, String part) {
        return Timer.builder("cohort.step.part.time")
                .description("a part of a training step")
                .tags(tags.and("part", part))
                .register(registry);
    }

    private void record(TrainingSteps.Step s) {
        step.record(s.nanos(), TimeUnit.NANOSECONDS);
        data.record(s.dataNanos(), TimeUnit.NANOSECONDS);
        forward.record(s.forwardNanos(), TimeUnit.NANOSECONDS);
        backward.record(s.backwardNanos(), TimeUnit.NANOSECONDS);
        average.record(s.averageNanos(), TimeUnit.NANOSECONDS);
        optimizer.record(s.optimizerNanos(), TimeUnit.NANOSECONDS);
        samples.increment(s.samples());
        lastRate = s.samplesPerSecond();
    }

    @Override
    public synchronized void close() throws Exception {
        if (observing != null) {
            observing.close();
        }
    }
}
