package dev.cohort.runtime.auth;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.SocketChannel;

/**
 * What a rank says first on a connection to another rank of its group (after the {@link
 * Handshake}, where there is a secret): {@value #BYTES} bytes, little-endian: the protocol's magic
 * number, the group's size and the sender's rank. The tcp and gloo engines' peer mesh and every
 * engine's messages ({@code PostOffice}) speak it, each with its own magic; a connection whose
 * hello is not one of this protocol and group is refused.
 *
 * @param magic names the protocol (8 ASCII characters as a long)
 * @param size  the group's ranks
 */
public record PeerHello(long magic, int size) {

    /** A hello's length in bytes. */
    public static final int BYTES = 3 * Long.BYTES;

    /** A buffer to read a hello into. */
    public static ByteBuffer buffer() {
        return ByteBuffer.allocate(BYTES).order(ByteOrder.LITTLE_ENDIAN);
    }

    /** Writes rank {@code rank}'s hello to {@code ch} (blocking). */
    public void send(SocketChannel ch, int rank) throws IOException {
        ByteBuffer hello = buffer().putLong(magic).putLong(size).putLong(rank).flip();
        while (hello.hasRemaining()) {
            ch.write(hello);
        }
    }

    /**
     * The rank in {@code hello}'s first {@value #BYTES} bytes (read with absolute gets, in
     * little-endian order), or -1 when they are not a hello of this protocol and group.
     */
    public int rankIn(ByteBuffer hello) {
        ByteBuffer b = hello.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.limit() < BYTES || b.getLong(0) != magic || b.getLong(Long.BYTES) != size) {
            return -1;
        }
        long r = b.getLong(2 * Long.BYTES);
        return r < 0 || r >= size ? -1 : (int) r;
    }
}
