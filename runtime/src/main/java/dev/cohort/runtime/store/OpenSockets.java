package dev.cohort.runtime.store;

import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;

/** The connections a server keeps open, closed together with its listening socket. */
public final class OpenSockets {

    private final Set<Socket> open = ConcurrentHashMap.newKeySet();

    public void add(Socket s) {
        open.add(s);
    }

    /** Forgets {@code s}, which its user closed. */
    public void remove(Socket s) {
        open.remove(s);
    }

    /** Closes {@code s}, quietly, and forgets it. */
    public void close(Socket s) {
        open.remove(s);
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }

    /** Closes {@code server}, then every connection still open. */
    public void closeAll(ServerSocket server) {
        try {
            server.close();
        } catch (IOException ignored) {
            // closing anyway
        }
        for (Socket s : open) {
            close(s);
        }
    }
}
