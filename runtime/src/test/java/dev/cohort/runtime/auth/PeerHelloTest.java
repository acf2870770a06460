package dev.cohort.runtime.auth;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.nio.ByteBuffer;
import java.nio.channels.ServerSocketChannel;
import java.nio.channels.SocketChannel;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class PeerHelloTest {

    private static final PeerHello HELLO = new PeerHello(0x436f686f72745450L, 4);

    @Test
    void aSentHelloNamesItsRank() throws IOException {
        try (ServerSocketChannel server =
                        ServerSocketChannel.open().bind(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0));
                SocketChannel dialer = SocketChannel.open(server.getLocalAddress());
                SocketChannel accepted = server.accept()) {
            HELLO.send(dialer, 3);
            ByteBuffer in = PeerHello.buffer();
            while (in.hasRemaining() && accepted.read(in) >= 0) {
                // until the whole hello is in
            }
            assertThat(HELLO.rankIn(in.flip())).isEqualTo(3);
        }
    }

    @Test
    void anotherProtocolGroupSizeOrRankIsNoHello() {
        assertThat(HELLO.rankIn(said(0x436f686f72745451L, 4, 1))).isEqualTo(-1);
        assertThat(HELLO.rankIn(said(0x436f686f72745450L, 5, 1))).isEqualTo(-1);
        assertThat(HELLO.rankIn(said(0x436f686f72745450L, 4, 4))).isEqualTo(-1);
        assertThat(HELLO.rankIn(said(0x436f686f72745450L, 4, -1))).isEqualTo(-1);
        assertThat(HELLO.rankIn(ByteBuffer.allocate(PeerHello.BYTES - 1))).isEqualTo(-1);
        assertThat(HELLO.rankIn(said(0x436f686f72745450L, 4, 2))).isEqualTo(2);
    }

    private static ByteBuffer said(long magic, long size, long rank) {
        return PeerHello.buffer().putLong(magic).putLong(size).putLong(rank).flip();
    }
}
