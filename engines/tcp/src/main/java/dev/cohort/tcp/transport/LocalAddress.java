package dev.cohort.tcp.transport;

import java.io.IOException;
import java.net.DatagramSocket;
import java.net.Inet4Address;
import java.net.InetAddress;
import java.net.NetworkInterface;
import java.net.SocketException;
import java.net.UnknownHostException;
import java.util.Collections;

/** Which local address a rank listens on for its peers. */
public final class LocalAddress {

    private LocalAddress() {}

    /** The local address the kernel would use to reach {@code host} (no packet is sent). */
    public static InetAddress towards(String host, int port) {
        InetAddress target;
        try {
            target = InetAddress.getByName(host);
        } catch (UnknownHostException e) {
            throw new IllegalArgumentException("MASTER_ADDR='" + host + "' does not resolve: " + e.getMessage(), e);
        }
        if (target.isLoopbackAddress()) {
            return target;
        }
        try (DatagramSocket probe = new DatagramSocket()) {
            probe.connect(target, port);
            InetAddress local = probe.getLocalAddress();
            if (local == null || local.isAnyLocalAddress()) {
                throw new IllegalStateException("no route from this host to MASTER_ADDR=" + host);
            }
            return local;
        } catch (IOException e) {
            throw new IllegalStateException(
                    "no route from this host to MASTER_ADDR=" + host + ": " + e.getMessage(), e);
        }
    }

    /**
     * The first IPv4 address (else any address) of the interface {@code name}; {@code option}
     * names where the name came from, for the error when there is no such interface.
     */
    public static InetAddress ofInterface(String name, String option) {
        try {
            NetworkInterface nic = NetworkInterface.getByName(name);
            if (nic == null) {
                throw new IllegalArgumentException(
                        "network interface '" + name + "' (from " + option + ") does not exist here; see `ip link`");
            }
            InetAddress any = null;
            for (InetAddress a : Collections.list(nic.getInetAddresses())) {
                if (a instanceof Inet4Address) {
                    return a;
                }
                any = any == null ? a : any;
            }
            if (any == null) {
                throw new IllegalArgumentException(
                        "network interface '" + name + "' (from " + option + ") has no address; see `ip addr`");
            }
            return any;
        } catch (SocketException e) {
            throw new IllegalStateException("cannot list network interfaces: " + e.getMessage(), e);
        }
    }
}
