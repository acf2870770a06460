package dev.cohort.testkit;

import dev.cohort.api.collective.ProcessGroup;
import java.util.Objects;

/** A suite's rank in its group and its checks: each counted, and a failed one names the rank ("rank 1 of 4: ..."). */
abstract class RankChecks {

    final int rank;
    final int n;
    private int checks;

    RankChecks(ProcessGroup group) {
        this.rank = group.rank();
        this.n = group.size();
    }

    /** Fails unless {@code actual} equals {@code expected}. */
    final void check(String what, Object actual, Object expected) {
        check(Objects.equals(actual, expected), what, actual, expected);
    }

    /** Fails unless {@code held}, saying what {@code actual} was and what was {@code expected}. */
    final void check(boolean held, String what, Object actual, Object expected) {
        if (!held) {
            fail(what + " is " + actual + ", expected " + expected);
        }
        counted(1);
    }

    /** Throws an AssertionError that starts with this rank. */
    final void fail(String message) {
        throw new AssertionError("rank " + rank + " of " + n + ": " + message);
    }

    /** Adds {@code more} checks made elsewhere (by a nested suite, or by a check of its own). */
    final void counted(int more) {
        checks += more;
    }

    final int checks() {
        return checks;
    }
}
