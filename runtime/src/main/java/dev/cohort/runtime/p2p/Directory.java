package dev.cohort.runtime.p2p;

import dev.cohort.runtime.store.Store;
import java.io.IOException;
import java.io.UncheckedIOException;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;
import java.util.function.IntFunction;

/** Where the ranks of a {@link PostOffice} find each other's listening addresses. */
public interface Directory {

    /** Makes this rank's address known. */
    void publish(int rank, InetSocketAddress address);

    /**
     * Rank {@code rank}'s address, waiting until it is published.
     *
     * @throws dev.cohort.api.collective.CollectiveTimeoutException or a store's timeout at {@code deadlineNanos}
     */
    InetSocketAddress lookup(int rank, long deadlineNanos);

    /** This rank's address is no longer good (its post office closed). */
    default void withdraw(int rank) {}

    /**
     * Addresses the ranks exchange themselves, with a collective of a group they already share:
     * {@link Gathered#mine()} after the post office published its address, then
     * {@link Gathered#fill} with every rank's, in rank order.
     */
    static Gathered gathered() {
        return new Gathered();
    }

    /** See {@link #gathered()}. */
    final class Gathered implements Directory {
        private volatile String mine = "";
        private volatile List<String> all;

        private Gathered() {}

        @Override
        public void publish(int rank, InetSocketAddress address) {
            mine = address.getHostString() + " " + address.getPort();
        }

        /** This rank's published address, as bytes to gather. */
        public byte[] mine() {
            return mine.getBytes(StandardCharsets.UTF_8);
        }

        /** Every rank's {@link #mine()}, in rank order. */
        public void fill(List<byte[]> everyRank) {
            all = everyRank.stream()
                    .map(b -> new String(b, StandardCharsets.UTF_8))
                    .toList();
        }

        @Override
        public InetSocketAddress lookup(int rank, long deadlineNanos) {
            List<String> known = all;
            if (known == null || rank >= known.size() || known.get(rank).isEmpty()) {
                throw new IllegalStateException("rank " + rank + "'s point-to-point address is not known here");
            }
            String[] hostPort = known.get(rank).split(" ");
            return new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1]));
        }
    }

    /** Addresses under {@code prefix} in a rendezvous store. */
    static Directory of(Store store, String prefix) {
        return new Directory() {
            @Override
            public void publish(int rank, InetSocketAddress address) {
                store.set(prefix + rank, address.getHostString() + " " + address.getPort());
            }

            @Override
            public InetSocketAddress lookup(int rank, long deadlineNanos) {
                store.await(List.of(prefix + rank), deadlineNanos);
                String[] hostPort = store.get(prefix + rank).split(" ");
                return new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1]));
            }
        };
    }

    /**
     * Addresses in files, one per rank ({@code file.apply(rank)}), for ranks of one host that share
     * no store (the shm engine): written whole by a rename, polled until they appear.
     */
    static Directory inFiles(IntFunction<Path> file) {
        return new Directory() {
            @Override
            public void publish(int rank, InetSocketAddress address) {
                Path target = file.apply(rank);
                Path partial = target.resolveSibling(target.getFileName() + ".partial");
                try {
                    Files.writeString(partial, address.getHostString() + " " + address.getPort());
                    Files.move(partial, target, StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
                } catch (IOException e) {
                    throw new UncheckedIOException(
                            "cannot publish rank " + rank + "'s point-to-point address in " + target + ": "
                                    + e.getMessage(),
                            e);
                }
            }

            @Override
            public void withdraw(int rank) {
                try {
                    Files.deleteIfExists(file.apply(rank));
                } catch (IOException ignored) {
                    // the launcher removes the run's files
                }
            }

            @Override
            public InetSocketAddress lookup(int rank, long deadlineNanos) {
                Path source = file.apply(rank);
                while (true) {
                    try {
                        String[] hostPort = new String(Files.readAllBytes(source), StandardCharsets.UTF_8).split(" ");
                        return new InetSocketAddress(hostPort[0], Integer.parseInt(hostPort[1]));
                    } catch (IOException missing) {
                        if (System.nanoTime() - deadlineNanos >= 0) {
                            throw new dev.cohort.api.collective.CollectiveTimeoutException(
                                    "rank " + rank + " never published its point-to-point address (" + source + ")",
                                    null);
                        }
                        java.util.concurrent.locks.LockSupport.parkNanos(2_000_000);
                    }
                }
            }
        };
    }
}
