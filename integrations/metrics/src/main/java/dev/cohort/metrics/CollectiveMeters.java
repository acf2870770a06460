package dev.cohort.metrics;

import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.OpKind;
import dev.cohort.runtime.AbstractProcessGroup;
import dev.cohort.runtime.flight.FlightRecorder;
import io.micrometer.core.instrument.FunctionCounter;
import io.micrometer.core.instrument.FunctionTimer;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.Tags;
import io.micrometer.core.instrument.binder.BaseUnits;
import io.micrometer.core.instrument.binder.MeterBinder;
import java.util.Objects;
import java.util.concurrent.TimeUnit;

/**
 * Micrometer meters of a rank's collectives, by kind: calls issued ({@code cohort.collective.calls}),
 * the bytes of this rank's buffers in them ({@code cohort.collective.bytes}), and their time from
 * issue to settle ({@code cohort.collective.time}); tagged {@code kind} and {@code rank}. They read
 * the counters the rank's flight recorder keeps, so binding them costs the collectives nothing.
 *
 * <pre>{@code
 * CollectiveMeters.of(backend).bindTo(registry);   // the program's own MeterRegistry
 * }</pre>
 */
public final class CollectiveMeters implements MeterBinder {

    private final FlightRecorder recorder;
    private final Tags tags;

    /** The meters of the calls {@code recorder} keeps, for rank {@code rank}. */
    public CollectiveMeters(FlightRecorder recorder, int rank) {
        this.recorder = Objects.requireNonNull(recorder, "recorder");
        this.tags = Tags.of("rank", Integer.toString(rank));
    }

    /**
     * The meters of {@code backend}'s world group, once initialized.
     *
     * @throws IllegalArgumentException when its group keeps no flight record (another backend than
     *                                  Cohort's engines, or {@value FlightRecorder#ENV_RECORDS}=0)
     */
    public static CollectiveMeters of(DistributedBackend backend) {
        if (backend.group() instanceof AbstractProcessGroup world
                && world.flightRecorder().isPresent()) {
            return new CollectiveMeters(world.flightRecorder().get(), backend.rank());
        }
        throw new IllegalArgumentException("the " + backend.name() + " backend's group keeps no flight record, which "
                + "the meters read: use one of Cohort's engines, without " + FlightRecorder.ENV_RECORDS + "=0");
    }

    @Override
    public void bindTo(MeterRegistry registry) {
        for (OpKind kind : OpKind.values()) {
            Tags these = tags.and("kind", kind.label());
            FunctionCounter.builder("cohort.collective.calls", recorder, r -> r.calls(kind))
                    .description("collectives (and sends and receives) this rank issued")
                    .tags(these)
                    .register(registry);
            FunctionCounter.builder("cohort.collective.bytes", recorder, r -> r.bytes(kind))
                    .description("bytes of this rank's buffers in the calls it issued")
                    .baseUnit(BaseUnits.BYTES)
                    .tags(these)
                    .register(registry);
            FunctionTimer.builder(
                            "cohort.collective.time",
                            recorder,
                            r -> r.settledCalls(kind),
                            r -> r.settledNanos(kind),
                            TimeUnit.NANOSECONDS)
                    .description("time from issuing a call to seeing it settled")
                    .tags(these)
                    .register(registry);
        }
    }
}
