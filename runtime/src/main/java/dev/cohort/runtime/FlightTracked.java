package dev.cohort.runtime;

import dev.cohort.runtime.flight.FlightRecorder;

/** A {@link dev.cohort.api.collective.Work} that tells a flight recorder when it settles. */
public interface FlightTracked {

    /**
     * The call is on record in {@code recorder} as {@code ticket}: mark it there when it settles
     * (at once, if it already has).
     */
    void recordedAs(FlightRecorder recorder, long ticket);
}
