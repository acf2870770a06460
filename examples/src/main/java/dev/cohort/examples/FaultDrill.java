package dev.cohort.examples;

import dev.cohort.api.JobEnvironment;
import dev.cohort.api.LaunchEnvironment;
import java.io.IOException;
import java.util.Map;

/**
 * A fault drill for recovery tests: with {@code COHORT_FAULT_AT_STEP=N} (and optionally
 * {@code COHORT_FAULT_RANK=R}, default 1), worker R kills itself with SIGKILL (no clean-up, no
 * shutdown hooks, sockets closed by the kernel: as a crash or the OOM killer would) right after step
 * N of the first attempt ({@code COHORT_RESTART_COUNT} 0). The restarted group resumes from the last
 * checkpoint and does not fail again. Where no {@code sh} can send the signal it halts the JVM
 * instead (exit code 70, equally abrupt).
 */
final class FaultDrill {

    static final String AT_STEP = "COHORT_FAULT_AT_STEP";
    static final String RANK = "COHORT_FAULT_RANK";
    static final int EXIT_CODE = 70;

    private final long atStep;
    private final int rank;

    private FaultDrill(long atStep, int rank) {
        this.atStep = atStep;
        this.rank = rank;
    }

    static FaultDrill fromEnvironment() {
        return from(JobEnvironment.currentVariables());
    }

    static FaultDrill from(Map<String, String> env) {
        String step = env.get(AT_STEP);
        boolean firstAttempt = LaunchEnvironment.parseRestartCount(env) == 0;
        if (step == null || step.isBlank() || !firstAttempt) {
            return new FaultDrill(-1, -1);
        }
        try {
            return new FaultDrill(
                    Long.parseLong(step.trim()),
                    Integer.parseInt(env.getOrDefault(RANK, "1").trim()));
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(
                    AT_STEP + "='" + step + "' and " + RANK + "='" + env.get(RANK) + "' must be whole numbers");
        }
    }

    void maybeFail(long step, int myRank) {
        if (step == atStep && myRank == rank) {
            System.out.println("fault drill: rank " + myRank + " kills itself (SIGKILL) after step " + step + " at "
                    + System.currentTimeMillis() + " ms");
            System.out.flush();
            killSelf();
        }
    }

    /** SIGKILL to this process (the JVM cannot signal itself, so a shell does); never returns. */
    private static void killSelf() {
        long pid = ProcessHandle.current().pid();
        try {
            new ProcessBuilder("sh", "-c", "kill -KILL " + pid)
                    .redirectErrorStream(true)
                    .redirectOutput(ProcessBuilder.Redirect.DISCARD)
                    .start();
            Thread.sleep(10_000); // the signal is on its way
        } catch (IOException e) {
            System.err.println("fault drill: cannot start sh to send SIGKILL (" + e.getMessage() + "); halting");
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Runtime.getRuntime().halt(EXIT_CODE);
    }
}
