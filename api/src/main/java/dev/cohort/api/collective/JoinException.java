package dev.cohort.api.collective;

import java.util.List;

/**
 * Joining a group failed, before any collective: the rendezvous was unreachable, a rank never
 * came or came twice, or the processes were started differently (world size, run, backend).
 * Every engine's connect failure is one of these; {@link #peers()} names the ranks at fault when
 * known.
 */
public class JoinException extends CollectiveException {
    private static final long serialVersionUID = 1L;

    public JoinException(String message, Throwable cause) {
        super(message, cause);
    }

    /** With this rank and the ranks at fault (see {@link CollectiveException}). */
    public JoinException(String message, Throwable cause, int rank, List<Integer> peers) {
        super(message, cause, rank, null, peers);
    }
}
