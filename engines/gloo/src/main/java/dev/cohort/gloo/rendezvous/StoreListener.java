package dev.cohort.gloo.rendezvous;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.channels.ServerSocketChannel;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.List;
import java.util.Locale;
import java.util.Set;

/**
 * A listening socket for rank 0's c10d TCP store, bound to one address (the store itself would
 * bind its port on every interface).
 *
 * <p>c10d takes a ready listening socket as {@code TCPStoreOptions.masterListenFd}. Java does not
 * expose a socket's file descriptor, so this binds a {@link ServerSocketChannel} and finds its descriptor in
 * {@code /proc/self/fd} by the socket's inode (read from {@code /proc/net/tcp[6]}). The store then
 * owns the descriptor; the Java channel is kept reachable for the life of the process and never
 * closed, so Java can neither close it twice nor let a cleaner close it under the store.
 */
final class StoreListener {

    /** Channels whose descriptors a store owns: kept reachable, never closed. */
    private static final List<ServerSocketChannel> HANDED_OVER = new java.util.concurrent.CopyOnWriteArrayList<>();

    private StoreListener() {
    }

    /** A listening socket: its descriptor (owned by the store from now on) and port. */
    record Listening(int fd, int port) {
    }

    /**
     * A listening socket on an ephemeral port of {@code address}, or {@code null} when this system
     * does not let us find its descriptor (no {@code /proc}).
     */
    static Listening bind(InetAddress address) throws IOException {
        ServerSocketChannel channel = ServerSocketChannel.open();
        channel.bind(new InetSocketAddress(address, 0), 512);
        int port = ((InetSocketAddress) channel.getLocalAddress()).getPort();
        int fd = descriptorOf(port);
        if (fd < 0) {
            try {
                channel.close();
            } catch (IOException ignored) {
                // falling back to the store's own socket
            }
            return null;
        }
        HANDED_OVER.add(channel);
        return new Listening(fd, port);
    }

    /** The descriptor of this process's socket listening on {@code port}, or -1. */
    private static int descriptorOf(int port) {
        Set<String> inodes = new HashSet<>();
        for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
            inodes.addAll(inodes(Path.of(table), String.format(Locale.ROOT, ":%04X", port), null, "0A"));
        }
        return descriptorOf(inodes);
    }

    /**
     * Whether the loopback connection from {@code clientPort} to {@code serverPort} was opened by
     * this process (its client end is one of this process's descriptors). False where there is no
     * {@code /proc} to tell.
     */
    static boolean openedHere(int clientPort, int serverPort) {
        Set<String> inodes = new HashSet<>();
        for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
            inodes.addAll(inodes(Path.of(table), String.format(Locale.ROOT, ":%04X", clientPort),
                    String.format(Locale.ROOT, ":%04X", serverPort), null));
        }
        return descriptorOf(inodes) >= 0;
    }

    private static int descriptorOf(Set<String> inodes) {
        if (inodes.isEmpty()) {
            return -1;
        }
        try (DirectoryStream<Path> fds = Files.newDirectoryStream(Path.of("/proc/self/fd"))) {
            for (Path fd : fds) {
                try {
                    String target = Files.readSymbolicLink(fd).toString();
                    if (target.startsWith("socket:[") && inodes.contains(target.substring(8, target.length() - 1))) {
                        return Integer.parseInt(fd.getFileName().toString());
                    }
                } catch (IOException | RuntimeException e) {
                    // a descriptor closed while listing, or not a link: not ours
                }
            }
        } catch (IOException e) {
            return -1;
        }
        return -1;
    }

    /**
     * Inodes of the sockets in {@code table} whose local port is {@code local} (":HHHH"), and
     * whose remote port is {@code remote} and state {@code state}, where given.
     */
    private static Set<String> inodes(Path table, String local, String remote, String state) {
        Set<String> inodes = new HashSet<>();
        try {
            for (String line : Files.readAllLines(table)) {
                String[] f = line.trim().split("\\s+");
                if (f.length > 9 && f[1].endsWith(local) && (remote == null || f[2].endsWith(remote))
                        && (state == null || f[3].equals(state)) && !f[9].equals("0")) {
                    inodes.add(f[9]);
                }
            }
        } catch (IOException e) {
            // no such table here
        }
        return inodes;
    }
}
