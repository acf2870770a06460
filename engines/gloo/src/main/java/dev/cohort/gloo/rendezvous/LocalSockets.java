package dev.cohort.gloo.rendezvous;

import java.io.IOException;
import java.nio.file.DirectoryStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashSet;
import java.util.Locale;
import java.util.Set;

/**
 * Which connections this process opened, told from {@code /proc}: a socket's inode in
 * {@code /proc/net/tcp[6]} (by its ports) among this process's descriptors in {@code /proc/self/fd}.
 */
final class LocalSockets {

    private LocalSockets() {}

    /**
     * Whether the connection from {@code clientPort} to {@code serverPort} was opened by
     * this process (its client end is one of this process's descriptors). False where there is no
     * {@code /proc} to tell.
     */
    static boolean openedHere(int clientPort, int serverPort) {
        Set<String> inodes = new HashSet<>();
        for (String table : new String[] {"/proc/net/tcp", "/proc/net/tcp6"}) {
            inodes.addAll(inodes(
                    Path.of(table),
                    String.format(Locale.ROOT, ":%04X", clientPort),
                    String.format(Locale.ROOT, ":%04X", serverPort),
                    null));
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
                if (f.length > 9
                        && f[1].endsWith(local)
                        && (remote == null || f[2].endsWith(remote))
                        && (state == null || f[3].equals(state))
                        && !f[9].equals("0")) {
                    inodes.add(f[9]);
                }
            }
        } catch (IOException e) {
            // no such table here
        }
        return inodes;
    }
}
