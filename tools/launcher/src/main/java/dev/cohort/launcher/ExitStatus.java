package dev.cohort.launcher;

/**
 * How a worker ended, from the exit value Java reports. Java gives a child killed by signal
 * {@code n} the exit value {@code 128 + n}, like a shell does, so "killed by SIGKILL" and
 * "exited with 137" cannot be told apart; both are described as the signal.
 */
public record ExitStatus(int code) {

    // Linux x86-64/arm64 numbering; index = signal number.
    private static final String[] SIGNALS = {
        null,
        "SIGHUP",
        "SIGINT",
        "SIGQUIT",
        "SIGILL",
        "SIGTRAP",
        "SIGABRT",
        "SIGBUS",
        "SIGFPE",
        "SIGKILL",
        "SIGUSR1",
        "SIGSEGV",
        "SIGUSR2",
        "SIGPIPE",
        "SIGALRM",
        "SIGTERM",
        "SIGSTKFLT",
        "SIGCHLD",
        "SIGCONT",
        "SIGSTOP",
        "SIGTSTP",
        "SIGTTIN",
        "SIGTTOU",
        "SIGURG",
        "SIGXCPU",
        "SIGXFSZ",
        "SIGVTALRM",
        "SIGPROF",
        "SIGWINCH",
        "SIGIO",
        "SIGPWR",
        "SIGSYS"
    };

    public boolean succeeded() {
        return code == 0;
    }

    /** The signal's name when {@code code} is 128 + a known signal number, else null. */
    public String signalName() {
        int sig = code - 128;
        return sig > 0 && sig < SIGNALS.length ? SIGNALS[sig] : null;
    }

    /** "exited with code 3" or "killed by SIGKILL (exit 137)". */
    public String describe() {
        String signal = signalName();
        return signal == null ? "exited with code " + code : "killed by " + signal + " (exit " + code + ")";
    }

    @Override
    public String toString() {
        return describe();
    }
}
