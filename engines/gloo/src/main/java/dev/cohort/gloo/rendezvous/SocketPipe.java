package dev.cohort.gloo.rendezvous;

import dev.cohort.runtime.Daemons;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.Socket;

/** Two connections joined: bytes copied both ways until either side ends, then both closed. */
final class SocketPipe {

    private SocketPipe() {}

    /** Copies on this thread and one more ({@code name}); returns once both directions ended. */
    static void join(Socket a, Socket b, String name) throws InterruptedException {
        Thread back = Daemons.thread(name, () -> copy(b, a));
        back.start();
        copy(a, b);
        back.join();
    }

    private static void copy(Socket from, Socket to) {
        byte[] buffer = new byte[16 * 1024];
        try {
            InputStream in = from.getInputStream();
            OutputStream out = to.getOutputStream();
            int n;
            while ((n = in.read(buffer)) >= 0) {
                out.write(buffer, 0, n);
            }
        } catch (IOException e) {
            // one side ended
        } finally {
            close(from);
            close(to);
        }
    }

    private static void close(Socket s) {
        try {
            s.close();
        } catch (IOException ignored) {
            // closing anyway
        }
    }
}
