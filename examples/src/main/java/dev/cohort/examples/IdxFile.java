package dev.cohort.examples;

import java.io.BufferedInputStream;
import java.io.EOFException;
import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.zip.GZIPInputStream;
import java.util.zip.ZipException;

/**
 * Reads an IDX file of unsigned bytes (the format of MNIST and Fashion-MNIST), gzip'd or not, and
 * checks it against its own header.
 *
 * <p>The format: a big-endian magic number {@code 0x0000TTNN} where {@code TT = 0x08} (unsigned
 * byte) and {@code NN} is the number of dimensions; then {@code NN} big-endian 32-bit sizes; then
 * the product of the sizes in bytes. Hence the magic numbers 2049 ({@code 0x0801}: labels, one
 * dimension) and 2051 ({@code 0x0803}: images, three dimensions).
 *
 * <p>A file named {@code *.gz} must be gzip data; any other name is read as gzip when it starts
 * with gzip's magic bytes and as plain IDX otherwise. The whole stream is read, so gzip's CRC and
 * length check run, and bytes beyond what the header announces are reported as an error.
 *
 * @param file       where it was read from
 * @param dimensions the sizes from the header, outermost first
 * @param data       the {@code product(dimensions)} data bytes (unsigned: use {@code b & 0xFF})
 */
public record IdxFile(Path file, int[] dimensions, byte[] data) {

    /** The magic number of a one-dimensional unsigned-byte IDX file (labels). */
    public static final int LABELS_MAGIC = 0x0801;
    /** The magic number of a three-dimensional unsigned-byte IDX file (images). */
    public static final int IMAGES_MAGIC = 0x0803;

    private static final int UNSIGNED_BYTE = 0x08;
    private static final int MAX_DIMENSIONS = 8;

    public IdxFile {
        dimensions = dimensions.clone();
    }

    /** The number of items: the outermost dimension. */
    public int count() {
        return dimensions[0];
    }

    @Override
    public int[] dimensions() {
        return dimensions.clone();
    }

    /**
     * Reads {@code file}, which must have the magic number {@code expectedMagic} ({@link #LABELS_MAGIC}
     * or {@link #IMAGES_MAGIC}).
     *
     * @throws DataFileException naming the file and what is wrong with it: missing, unreadable, not
     *                           gzip, corrupt gzip, wrong magic number, bad sizes, truncated, too long
     */
    public static IdxFile read(Path file, int expectedMagic) throws DataFileException {
        if (!Files.exists(file)) {
            throw new DataFileException(file, "file not found");
        }
        if (!Files.isRegularFile(file)) {
            throw new DataFileException(file, "not a regular file");
        }
        try (InputStream raw = new BufferedInputStream(Files.newInputStream(file), 1 << 16)) {
            return parse(file, open(file, raw), expectedMagic);
        } catch (DataFileException e) {
            throw e;
        } catch (NoSuchFileException e) {
            throw new DataFileException(file, "file not found", e);
        } catch (EOFException e) {
            throw new DataFileException(
                    file, "truncated gzip data: the compressed stream ends early (" + e.getMessage() + ")", e);
        } catch (ZipException e) {
            throw new DataFileException(file, "corrupt gzip data (" + e.getMessage() + ")", e);
        } catch (IOException e) {
            throw new DataFileException(file, "could not be read: " + e, e);
        }
    }

    private static InputStream open(Path file, InputStream raw) throws IOException {
        raw.mark(2);
        int b0 = raw.read();
        int b1 = raw.read();
        raw.reset();
        boolean gzip = b0 == 0x1f && b1 == 0x8b;
        boolean namedGz = file.getFileName().toString().endsWith(".gz");
        if (b0 < 0) {
            throw new DataFileException(file, "the file is empty");
        }
        if (namedGz && !gzip) {
            throw new DataFileException(
                    file,
                    "not in gzip format although named .gz (first bytes "
                            + String.format("%02x %02x", b0, Math.max(b1, 0)) + ", gzip starts with 1f 8b)");
        }
        return gzip ? new GZIPInputStream(raw, 1 << 16) : raw;
    }

    private static IdxFile parse(Path file, InputStream in, int expectedMagic) throws IOException {
        int magic = readHeaderInt(file, in, "the magic number");
        if (magic != expectedMagic) {
            throw new DataFileException(
                    file,
                    "bad magic number " + magic + " (0x" + Integer.toHexString(magic)
                            + "), expected " + expectedMagic + " (" + describe(expectedMagic) + ")"
                            + (magic == LABELS_MAGIC || magic == IMAGES_MAGIC
                                    ? ": it holds " + describe(magic) + " instead"
                                    : ""));
        }
        if ((magic >>> 8) != UNSIGNED_BYTE) {
            throw new IllegalArgumentException("only unsigned-byte IDX files are supported, asked for magic " + magic);
        }
        int rank = magic & 0xFF;
        if (rank < 1 || rank > MAX_DIMENSIONS) {
            throw new DataFileException(file, "unsupported number of dimensions " + rank);
        }
        int[] dims = new int[rank];
        long size = 1;
        for (int i = 0; i < rank; i++) {
            dims[i] = readHeaderInt(file, in, "size " + (i + 1) + " of " + rank);
            if (dims[i] <= 0) {
                throw new DataFileException(
                        file,
                        "bad header: size " + (i + 1) + " of " + rank + " is " + dims[i] + " (sizes "
                                + Arrays.toString(Arrays.copyOf(dims, i + 1)) + ")");
            }
            size *= dims[i];
            if (size > Integer.MAX_VALUE - 16) {
                throw new DataFileException(
                        file,
                        "bad header: sizes " + Arrays.toString(Arrays.copyOf(dims, i + 1))
                                + " describe more than 2 GiB of data");
            }
        }
        byte[] data = new byte[(int) size];
        int read = in.readNBytes(data, 0, data.length);
        if (read < data.length) {
            throw new DataFileException(
                    file,
                    "truncated: the header " + Arrays.toString(dims) + " announces " + data.length
                            + " data bytes but the file holds only " + read);
        }
        long extra = 0;
        byte[] rest = new byte[8192];
        for (int n; (n = in.read(rest)) > 0; ) {
            extra += n;
        }
        if (extra > 0) {
            throw new DataFileException(
                    file,
                    "corrupt: " + extra + " bytes after the " + data.length + " data bytes the header "
                            + Arrays.toString(dims) + " announces");
        }
        return new IdxFile(file, dims, data);
    }

    private static int readHeaderInt(Path file, InputStream in, String what) throws IOException {
        byte[] b = new byte[4];
        int n = in.readNBytes(b, 0, 4);
        if (n < 4) {
            throw new DataFileException(
                    file, "truncated: the file ends inside the header (reading " + what + ")", new EOFException());
        }
        return ((b[0] & 0xFF) << 24) | ((b[1] & 0xFF) << 16) | ((b[2] & 0xFF) << 8) | (b[3] & 0xFF);
    }

    private static String describe(int magic) {
        return switch (magic) {
            case LABELS_MAGIC -> "labels, 1 dimension";
            case IMAGES_MAGIC -> "images, 3 dimensions";
            default -> "unsigned bytes, " + (magic & 0xFF) + " dimensions";
        };
    }
}
