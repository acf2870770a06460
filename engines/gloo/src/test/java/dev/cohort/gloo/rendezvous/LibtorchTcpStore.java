package dev.cohort.gloo.rendezvous;

import dev.cohort.libtorch.LibTorch;
import java.time.Duration;
import org.bytedeco.javacpp.SizeTPointer;
import org.bytedeco.javacpp.chrono.Milliseconds;
import org.bytedeco.pytorch.TCPStore;
import org.bytedeco.pytorch.TCPStoreOptions;

/** libtorch's own c10d TCP store on this host, for the tests that talk to it or are talked to by it. */
final class LibtorchTcpStore {

    private LibtorchTcpStore() {}

    /** libtorch's store at 127.0.0.1:{@code port}: its server, or a client of one, with {@code timeout}. */
    static TCPStore on(int port, boolean server, Duration timeout) {
        LibTorch.load();
        TCPStoreOptions options = new TCPStoreOptions()
                .isServer(server)
                .numWorkers(new SizeTPointer(1).put(1))
                .waitWorkers(false)
                .timeout(new Milliseconds(timeout.toMillis()));
        options.port((short) port);
        return new TCPStore("127.0.0.1", options);
    }
}
