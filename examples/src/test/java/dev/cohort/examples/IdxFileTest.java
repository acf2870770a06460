package dev.cohort.examples;

import static dev.cohort.examples.IdxFiles.gzip;
import static dev.cohort.examples.IdxFiles.idx;
import static dev.cohort.examples.IdxFiles.images;
import static dev.cohort.examples.IdxFiles.labels;
import static dev.cohort.examples.IdxFiles.write;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.assertj.core.api.AbstractThrowableAssert;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class IdxFileTest {

    @TempDir
    Path dir;

    @Test
    void readsGzipAndPlainFiles() throws IOException {
        Path gz = write(dir.resolve("a-images-idx3-ubyte.gz"), gzip(images(3)));
        Path plain = write(dir.resolve("a-images-idx3-ubyte"), images(3));
        for (Path p : new Path[] {gz, plain}) {
            IdxFile f = IdxFile.read(p, IdxFile.IMAGES_MAGIC);
            assertThat(f.dimensions()).containsExactly(3, 28, 28);
            assertThat(f.count()).isEqualTo(3);
            assertThat(f.data()).hasSize(3 * 784);
            assertThat(f.data()[2 * 784]).isEqualTo((byte) 2);
        }
    }

    @Test
    void plainFileNamedOtherwiseMayStillBeGzip() throws IOException {
        Path p = write(dir.resolve("labels.idx"), gzip(labels(5)));
        assertThat(IdxFile.read(p, IdxFile.LABELS_MAGIC).data()).containsExactly(0, 1, 2, 3, 4);
    }

    @Test
    void missingFileIsNamed() {
        Path p = dir.resolve("nothing-here.gz");
        assertReadFails(p, IdxFile.LABELS_MAGIC, "not found")
                .isInstanceOf(DataFileException.class)
                .satisfies(e -> assertThat(((DataFileException) e).file()).isEqualTo(p));
    }

    @Test
    void emptyFile() throws IOException {
        Path p = write(dir.resolve("empty"), new byte[0]);
        assertReadFails(p, IdxFile.LABELS_MAGIC, "empty");
    }

    @Test
    void badMagicNumber() throws IOException {
        Path p = write(dir.resolve("x.gz"), gzip(idx(0x0802, new int[] {2, 2}, new byte[4])));
        assertReadFails(p, IdxFile.LABELS_MAGIC, "bad magic number 2050", "expected 2049")
                .isInstanceOf(DataFileException.class);
    }

    @Test
    void labelsWhereImagesBelongSayWhatTheFileHolds() throws IOException {
        Path p = write(dir.resolve("train-images-idx3-ubyte.gz"), gzip(labels(4)));
        assertReadFails(p, IdxFile.IMAGES_MAGIC, "bad magic number 2049", "it holds labels");
    }

    @Test
    void truncatedData() throws IOException {
        byte[] full = images(4);
        Path p = write(dir.resolve("t.gz"), gzip(Arrays.copyOf(full, full.length - 100)));
        assertReadFails(p, IdxFile.IMAGES_MAGIC, "truncated", "announces 3136 data bytes but the file holds only 3036")
                .isInstanceOf(DataFileException.class);
    }

    @Test
    void truncatedHeader() throws IOException {
        Path p = write(dir.resolve("h"), Arrays.copyOf(images(1), 6));
        assertReadFails(p, IdxFile.IMAGES_MAGIC, "truncated", "header");
    }

    @Test
    void truncatedGzipStream() throws IOException {
        byte[] gz = gzip(images(20));
        Path p = write(dir.resolve("cut.gz"), Arrays.copyOf(gz, gz.length / 2));
        assertReadFails(p, IdxFile.IMAGES_MAGIC, "truncated").isInstanceOf(DataFileException.class);
    }

    @Test
    void corruptGzipData() throws IOException {
        byte[] gz = gzip(labels(1000));
        for (int i = 20; i < gz.length - 12; i++) {
            gz[i] ^= (byte) 0x5a;
        }
        Path p = write(dir.resolve("bad.gz"), gz);
        assertThatThrownBy(() -> IdxFile.read(p, IdxFile.LABELS_MAGIC))
                .isInstanceOf(DataFileException.class)
                .hasMessageContaining(p.toString())
                .satisfies(e -> assertThat(e.getMessage()).containsAnyOf("corrupt", "truncated", "bad magic"));
    }

    @Test
    void flippedBitCaughtByGzipChecksum() throws IOException {
        byte[] gz = gzip(labels(10));
        Path p = write(dir.resolve("crc.gz"), gz);
        gz[gz.length - 8] ^= 1; // first byte of the CRC-32 trailer
        Files.write(p, gz);
        assertReadFails(p, IdxFile.LABELS_MAGIC, "corrupt gzip data");
    }

    @Test
    void notGzipButNamedGz() throws IOException {
        Path p = write(dir.resolve("train-labels-idx1-ubyte.gz"), labels(10));
        assertReadFails(p, IdxFile.LABELS_MAGIC, "not in gzip format").isInstanceOf(DataFileException.class);
    }

    @Test
    void bytesBeyondTheHeadersCountAreAnError() throws IOException {
        byte[] l = labels(10);
        Path p = write(dir.resolve("long"), Arrays.copyOf(l, l.length + 3));
        assertReadFails(p, IdxFile.LABELS_MAGIC, "3 bytes after");
    }

    @Test
    void zeroOrNegativeSizes() throws IOException {
        Path p = write(dir.resolve("neg"), idx(IdxFile.IMAGES_MAGIC, new int[] {2, -28, 28}, new byte[0]));
        assertReadFails(p, IdxFile.IMAGES_MAGIC, "size 2 of 3 is -28");
    }

    @Test
    void absurdSizesAreRejectedBeforeAllocating() throws IOException {
        Path p = write(
                dir.resolve("huge"), idx(IdxFile.IMAGES_MAGIC, new int[] {1 << 20, 1 << 10, 1 << 10}, new byte[0]));
        assertReadFails(p, IdxFile.IMAGES_MAGIC, "more than 2 GiB");
    }

    /**
     * Reading {@code p} as a file of {@code magic} fails with a message that names {@code p} and
     * says each of {@code says}; returns the assertion on what it threw, for more.
     */
    private static AbstractThrowableAssert<?, ? extends Throwable> assertReadFails(Path p, int magic, String... says) {
        return assertThatThrownBy(() -> IdxFile.read(p, magic))
                .hasMessageContaining(p.toString())
                .hasMessageContainingAll(says);
    }
}
