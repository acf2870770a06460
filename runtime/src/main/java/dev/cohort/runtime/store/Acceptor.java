package dev.cohort.runtime.store;

import dev.cohort.runtime.Daemons;
import java.io.IOException;
import java.net.ServerSocket;
import java.net.Socket;
import java.util.function.Consumer;

/** A daemon thread that accepts connections on a listening socket, handing each on, until the socket closes. */
public final class Acceptor {

    private Acceptor() {}

    /** Starts the thread {@code name}: every connection {@code server} accepts goes to {@code handler}. */
    public static void start(String name, ServerSocket server, Consumer<Socket> handler) {
        Daemons.start(name, () -> {
            while (true) {
                Socket s;
                try {
                    s = server.accept();
                } catch (IOException e) {
                    return; // closed
                }
                handler.accept(s);
            }
        });
    }
}
