package dev.cohort.data;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.ClosedChannelException;
import java.nio.channels.NonWritableChannelException;
import java.nio.channels.SeekableByteChannel;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FSDataInputStream;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;

/**
 * A file of any Hadoop file system as the read-only {@link SeekableByteChannel} that Arrow's
 * {@code ArrowFileReader} reads: each read is a positioned read ({@code readFully(position, ...)})
 * of the stream, so seeking costs nothing until the next read. Reads into a direct buffer (Arrow's
 * record batch bodies) go through a reused heap chunk.
 */
final class HadoopReadChannel implements SeekableByteChannel {

    private static final int CHUNK = 1 << 16;

    private final FSDataInputStream in;
    private final long size;
    private long position;
    private byte[] chunk;
    private boolean open = true;

    private HadoopReadChannel(FSDataInputStream in, long size) {
        this.in = in;
        this.size = size;
    }

    /** Opens {@code file} (a path or URI) on its file system; its length is read now. */
    static HadoopReadChannel open(String file, Configuration conf) throws IOException {
        Path path = new Path(file);
        FileSystem fs = path.getFileSystem(conf);
        long size = fs.getFileStatus(path).getLen();
        return new HadoopReadChannel(fs.open(path), size);
    }

    @Override
    public int read(ByteBuffer dst) throws IOException {
        if (!open) {
            throw new ClosedChannelException();
        }
        if (position >= size) {
            return -1;
        }
        int n = (int) Math.min(dst.remaining(), size - position);
        if (dst.hasArray()) {
            in.readFully(position, dst.array(), dst.arrayOffset() + dst.position(), n);
            dst.position(dst.position() + n);
        } else {
            if (chunk == null) {
                chunk = new byte[CHUNK];
            }
            for (int done = 0; done < n; ) {
                int part = Math.min(CHUNK, n - done);
                in.readFully(position + done, chunk, 0, part);
                dst.put(chunk, 0, part);
                done += part;
            }
        }
        position += n;
        return n;
    }

    @Override
    public int write(ByteBuffer src) {
        throw new NonWritableChannelException();
    }

    @Override
    public long position() {
        return position;
    }

    @Override
    public SeekableByteChannel position(long newPosition) {
        if (newPosition < 0) {
            throw new IllegalArgumentException("a negative position: " + newPosition);
        }
        position = newPosition;
        return this;
    }

    @Override
    public long size() {
        return size;
    }

    @Override
    public SeekableByteChannel truncate(long newSize) {
        throw new NonWritableChannelException();
    }

    @Override
    public boolean isOpen() {
        return open;
    }

    @Override
    public void close() throws IOException {
        if (open) {
            open = false;
            in.close();
        }
    }
}
