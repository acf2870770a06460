package dev.cohort.api;

import java.time.Duration;

/** Checks and conversions for the timeouts every blocking call and engine option takes. */
public final class Timeouts {

    private Timeouts() {}

    /** {@code timeout}, when it is positive; otherwise an error saying so. */
    public static Duration requirePositive(Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException("timeout must be positive, got " + timeout);
        }
        return timeout;
    }

    /** A positive {@code timeout} as seconds, for a command-line option called {@code option}. */
    public static double toSeconds(String option, Duration timeout) {
        if (timeout == null || timeout.isNegative() || timeout.isZero()) {
            throw new IllegalArgumentException(option + " must be positive, got " + timeout);
        }
        return timeout.toNanos() / 1e9;
    }

    /** The value of the seconds option {@code option}, which must be positive and finite. */
    public static Duration ofSeconds(String option, double seconds) {
        if (!(seconds > 0) || Double.isInfinite(seconds)) {
            throw new IllegalArgumentException(option + " must be a positive number of seconds, got " + seconds);
        }
        return Duration.ofNanos((long) (seconds * 1e9));
    }
}
