package dev.cohort.runtime;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What tells hosts apart when ranks learn which of them share one: the host name, the kernel's
 * boot id and the device of {@code /dev/shm}. Containers or network namespaces on one kernel share
 * the boot id, and share memory through {@code /dev/shm} only when they see the same one, so two
 * ranks are on one host, as shared memory counts hosts, only when all three agree.
 */
public final class HostIdentity {

    private HostIdentity() {}

    /** This process's host, as one token without spaces or '|'. */
    public static String current() {
        String name = read(Path.of("/proc/sys/kernel/hostname"));
        if (name.isEmpty()) {
            try {
                name = java.net.InetAddress.getLocalHost().getHostName();
            } catch (IOException e) {
                name = "unknown-host";
            }
        }
        String shm;
        try {
            Path dir = Path.of("/dev/shm");
            shm = Files.getAttribute(dir, "unix:dev") + ":" + Files.getAttribute(dir, "unix:ino");
        } catch (IOException | RuntimeException e) {
            shm = "none";
        }
        return (name + "/" + read(Path.of("/proc/sys/kernel/random/boot_id")) + "/" + shm).replaceAll("[\\s|]", "_");
    }

    private static String read(Path file) {
        try {
            return Files.readString(file).trim();
        } catch (IOException | RuntimeException e) {
            return "";
        }
    }
}
