package dev.cohort.data;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.util.EnumSet;
import java.util.Set;
import org.apache.parquet.bytes.BytesUtils;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.Dictionary;
import org.apache.parquet.column.Encoding;
import org.apache.parquet.column.page.DataPage;
import org.apache.parquet.column.page.DataPageV1;
import org.apache.parquet.column.page.DataPageV2;
import org.apache.parquet.column.page.DictionaryPage;
import org.apache.parquet.column.page.PageReader;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.schema.PrimitiveType.PrimitiveTypeName;

/**
 * Decodes a numeric column chunk a page at a time, in bulk: the repetition and definition levels
 * and the dictionary ids into int arrays (Parquet's RLE/bit-packed hybrid), plain values straight
 * from the page's bytes. Parquet's {@code ColumnReader} pays several virtual calls a value, which
 * made decoding the loader's cost; this reads the same pages (Parquet's page reader decompresses
 * them) in plain loops. Chunks with other encodings ({@link #decodes}) take the ColumnReader.
 */
final class ChunkDecoder {

    /** A page holds what this class does not decode: the row group is read again the slow way. */
    static final class Unsupported extends Exception {
        Unsupported(String what) {
            super(what, null, false, false);
        }
    }

    /** Where a stretch's decoded values go: its value {@code i} is the chunk's {@code first + i}. */
    interface Sink {
        void copy(ChunkDecoder decoded, int first, int count);
    }

    private static final Set<Encoding> VALUES =
            EnumSet.of(Encoding.PLAIN, Encoding.PLAIN_DICTIONARY, Encoding.RLE_DICTIONARY);

    /** Values decoded at a time: the stretch's levels, ids and values stay in the core's cache. */
    static final int STRETCH = 4096;

    private final int[] repetition = new int[STRETCH];
    private final int[] definition = new int[STRETCH];
    private final int[] ids = new int[STRETCH];
    private final Hybrid repetitionLevels = new Hybrid();
    private final Hybrid definitionLevels = new Hybrid();
    private final Hybrid dictionaryIds = new Hybrid();
    private ByteBuffer valueBytes;
    private Encoding valueEncoding;
    private float[] floatDictionary;
    private long[] longDictionary;
    /** A stretch's values, as floats (features) or longs (labels). */
    final float[] floats = new float[STRETCH];

    final long[] longs = new long[STRETCH];

    /**
     * Whether the footer lists only encodings this class decodes (levels of width 0 may say
     * BIT_PACKED: they take no bytes).
     */
    static boolean decodes(ColumnChunkMetaData chunk, ColumnDescriptor leaf) {
        boolean levels = leaf.getMaxRepetitionLevel() > 0 || leaf.getMaxDefinitionLevel() > 0;
        for (Encoding e : chunk.getEncodings()) {
            boolean ok = VALUES.contains(e) || e == Encoding.RLE || (e == Encoding.BIT_PACKED && !levels);
            if (!ok) {
                return false;
            }
        }
        return true;
    }

    /**
     * Decodes every page of {@code pages}, {@code rows} rows of {@code width} values each (1 for a
     * scalar column), and hands each page's values to {@code sink}, once the page's rows are known
     * to be whole: value {@code k} of the chunk is row {@code k / width}'s value {@code k % width}.
     * {@code asLongs} decodes values into {@link #longs}, else into {@link #floats}.
     *
     * @throws DataException on a null, a list of another length, more or fewer rows than {@code rows}
     */
    void decode(PageReader pages, ColumnDescriptor leaf, int rows, int width, boolean asLongs, Sink sink, Where where)
            throws Unsupported {
        PrimitiveTypeName type = leaf.getPrimitiveType().getPrimitiveTypeName();
        dictionary(pages, leaf, type, asLongs, where);
        int maxRepetition = leaf.getMaxRepetitionLevel();
        int maxDefinition = leaf.getMaxDefinitionLevel();
        int row = -1;
        int length = width; // values in the current row; width before the first
        int first = 0; // the chunk's values before this page
        boolean whole = true; // no row too long so far: past one, nothing is copied and its error comes at its end
        DataPage page;
        while ((page = pages.readPage()) != null) {
            int n = page.getValueCount();
            startPage(page, maxRepetition, maxDefinition, asLongs);
            for (int at = 0; at < n; at += STRETCH) {
                int c = Math.min(STRETCH, n - at);
                if (maxRepetition > 0) {
                    repetitionLevels.next(repetition, c);
                }
                if (maxDefinition > 0) {
                    definitionLevels.next(definition, c);
                }
                for (int i = 0; i < c; i++) {
                    if (maxRepetition == 0 || repetition[i] == 0) {
                        if (length != width) {
                            throw where.listLength(row, length, width);
                        }
                        if (++row >= rows) {
                            throw where.error("the column holds more rows than the footer's " + rows);
                        }
                        length = 0;
                    }
                    if (maxDefinition > 0 && definition[i] < maxDefinition) {
                        throw where.error(
                                width == 1 && maxRepetition == 0
                                        ? "row " + row + " of " + rows + " is null"
                                        : "row " + row + " holds a null or an empty list; every row needs " + width
                                                + " numbers");
                    }
                    whole &= ++length <= width;
                }
                if (whole) {
                    values(c, type, asLongs, where);
                    sink.copy(this, first, c);
                    first += c;
                }
            }
        }
        if (length != width) {
            throw where.listLength(row, length, width);
        }
        if (row + 1 != rows) {
            throw where.error("the column ends at row " + (row + 1) + " of " + rows);
        }
    }

    /** Where a chunk lies, for errors. */
    record Where(String file, int rowGroup, String column) {
        DataException error(String message) {
            return new DataException(file, rowGroup, column, message);
        }

        DataException listLength(int row, int length, int width) {
            return error("row " + row + " holds a list of " + length + " numbers where the dataset's are of " + width);
        }
    }

    /** Reads the chunk's dictionary page, if any, into a table of the values' kind. */
    private void dictionary(
            PageReader pages, ColumnDescriptor leaf, PrimitiveTypeName type, boolean asLongs, Where where)
            throws Unsupported {
        floatDictionary = null;
        longDictionary = null;
        DictionaryPage page = pages.readDictionaryPage();
        if (page == null) {
            return;
        }
        Dictionary dictionary;
        try {
            dictionary = page.getEncoding().initDictionary(leaf, page);
        } catch (IOException | RuntimeException e) {
            throw where.error("cannot decode the column's dictionary (corrupt?): " + e);
        }
        int size = dictionary.getMaxId() + 1;
        if (asLongs) {
            longDictionary = new long[size];
            for (int id = 0; id < size; id++) {
                longDictionary[id] = switch (type) {
                    case INT32 -> dictionary.decodeToInt(id);
                    case INT64 -> dictionary.decodeToLong(id);
                    default -> throw new Unsupported(type + " labels");
                };
            }
        } else {
            floatDictionary = new float[size];
            for (int id = 0; id < size; id++) {
                floatDictionary[id] = switch (type) {
                    case FLOAT -> dictionary.decodeToFloat(id);
                    case DOUBLE -> (float) dictionary.decodeToDouble(id);
                    case INT32 -> dictionary.decodeToInt(id);
                    case INT64 -> dictionary.decodeToLong(id);
                    default -> throw new Unsupported(type + " values");
                };
            }
        }
    }

    /** Points the level and value decoders at the page's sections. */
    private void startPage(DataPage page, int maxRepetition, int maxDefinition, boolean asLongs) throws Unsupported {
        ByteBuffer rl;
        ByteBuffer dl;
        if (page instanceof DataPageV1 v1) {
            ByteBuffer bytes = buffer(v1.getBytes());
            rl = levelSection(bytes, v1.getRlEncoding(), maxRepetition);
            dl = levelSection(bytes, v1.getDlEncoding(), maxDefinition);
            this.valueBytes = bytes;
            this.valueEncoding = v1.getValueEncoding();
        } else if (page instanceof DataPageV2 v2) {
            rl = buffer(v2.getRepetitionLevels());
            dl = buffer(v2.getDefinitionLevels());
            this.valueBytes = buffer(v2.getData());
            this.valueEncoding = v2.getDataEncoding();
        } else {
            throw new Unsupported("a page of kind " + page.getClass().getSimpleName());
        }
        if (maxRepetition > 0) {
            repetitionLevels.start(rl, BytesUtils.getWidthFromMaxInt(maxRepetition));
        }
        if (maxDefinition > 0) {
            definitionLevels.start(dl, BytesUtils.getWidthFromMaxInt(maxDefinition));
        }
        if (valueEncoding != Encoding.PLAIN) {
            if (!valueEncoding.usesDictionary() || (asLongs ? longDictionary : floatDictionary) == null) {
                throw new Unsupported(valueEncoding + " values");
            }
            dictionaryIds.start(valueBytes, valueBytes.get() & 0xff);
        }
    }

    /** A V1 page's level section (RLE, its length first) as a buffer of its own; the page moves past it. */
    private static ByteBuffer levelSection(ByteBuffer page, Encoding encoding, int maxLevel) throws Unsupported {
        if (maxLevel == 0) {
            return null;
        }
        if (encoding != Encoding.RLE) {
            throw new Unsupported(encoding + " levels");
        }
        int length = page.getInt();
        ByteBuffer section = page.slice().order(ByteOrder.LITTLE_ENDIAN).limit(length);
        page.position(page.position() + length);
        return section;
    }

    /** Decodes the stretch's {@code n} values (none null) into {@link #floats} or {@link #longs}. */
    private void values(int n, PrimitiveTypeName type, boolean asLongs, Where where) throws Unsupported {
        ByteBuffer in = valueBytes;
        if (valueEncoding == Encoding.PLAIN) {
            int size = type == PrimitiveTypeName.DOUBLE || type == PrimitiveTypeName.INT64 ? 8 : 4;
            if (in.remaining() < n * size) {
                throw where.error("cannot decode the column (corrupt?): a page ends inside its values");
            }
            plain(in, n, type, asLongs);
            in.position(in.position() + n * size);
            return;
        }
        dictionaryIds.next(ids, n);
        // An id past the dictionary (a corrupt page) fails the array access: a DataException for the caller.
        if (asLongs) {
            for (int i = 0; i < n; i++) {
                longs[i] = longDictionary[ids[i]];
            }
        } else {
            for (int i = 0; i < n; i++) {
                floats[i] = floatDictionary[ids[i]];
            }
        }
    }

    private void plain(ByteBuffer in, int n, PrimitiveTypeName type, boolean asLongs) throws Unsupported {
        in.order(ByteOrder.LITTLE_ENDIAN);
        switch (type) {
            case FLOAT -> {
                if (asLongs) {
                    throw new Unsupported("float labels");
                }
                in.slice().order(ByteOrder.LITTLE_ENDIAN).asFloatBuffer().get(floats, 0, n);
            }
            case DOUBLE -> {
                if (asLongs) {
                    throw new Unsupported("double labels");
                }
                for (int i = 0; i < n; i++) {
                    floats[i] = (float) in.getDouble(in.position() + 8 * i);
                }
            }
            case INT32, INT64 -> {
                boolean wide = type == PrimitiveTypeName.INT64;
                for (int i = 0; i < n; i++) {
                    long value = wide ? in.getLong(in.position() + 8 * i) : in.getInt(in.position() + 4 * i);
                    if (asLongs) {
                        longs[i] = value;
                    } else {
                        floats[i] = value;
                    }
                }
            }
            default -> throw new Unsupported(type + " values");
        }
    }

    /**
     * Decodes {@code n} values of Parquet's RLE/bit-packed hybrid from {@code in} into {@code out},
     * {@code stretch} values at a time (as a page's stretches cut runs anywhere).
     */
    static void hybrid(ByteBuffer in, int bitWidth, int[] out, int n, int stretch) {
        Hybrid decoder = new Hybrid();
        decoder.start(in, bitWidth);
        int[] part = new int[stretch];
        for (int at = 0; at < n; at += stretch) {
            int c = Math.min(stretch, n - at);
            decoder.next(part, c);
            System.arraycopy(part, 0, out, at, c);
        }
    }

    /**
     * Parquet's RLE/bit-packed hybrid, a stretch at a time: runs, each a varint header whose low
     * bit says a repeated value (then the value in {@code ceil(bitWidth / 8)} bytes) or groups of 8
     * values packed least significant bit first.
     */
    static final class Hybrid {
        private ByteBuffer in;
        private int bitWidth;
        private int mask;
        private int left; // values left in the current run
        private boolean packed;
        private int value; // a repeated run's value
        private byte[] bytes; // a packed run's bytes, from index p
        private int p;
        private long bits;
        private int have;

        void start(ByteBuffer in, int bitWidth) {
            this.in = in;
            this.bitWidth = bitWidth;
            this.mask = bitWidth == 32 ? -1 : (1 << bitWidth) - 1;
            this.left = 0;
        }

        /** The next {@code n} values, into {@code out[0, n)}. */
        void next(int[] out, int n) {
            int i = 0;
            while (i < n) {
                while (left == 0) {
                    run();
                }
                int end = i + Math.min(left, n - i);
                left -= end - i;
                if (!packed) {
                    java.util.Arrays.fill(out, i, end, value);
                    i = end;
                } else if (bitWidth == 8) {
                    while (i < end) {
                        out[i++] = bytes[p++] & 0xff;
                    }
                } else {
                    while (i < end) {
                        while (have < bitWidth) {
                            bits |= (long) (bytes[p++] & 0xff) << have;
                            have += 8;
                        }
                        out[i++] = (int) bits & mask;
                        bits >>>= bitWidth;
                        have -= bitWidth;
                    }
                }
            }
        }

        private void run() {
            int header = varint(in);
            if ((header & 1) == 0) {
                packed = false;
                left = header >>> 1;
                value = 0;
                for (int b = 0; b < (bitWidth + 7) / 8; b++) {
                    value |= (in.get() & 0xff) << (8 * b);
                }
            } else {
                packed = true;
                int groups = header >>> 1;
                left = groups * 8; // values past the page's count in the last group are padding
                int length = groups * bitWidth;
                if (in.hasArray()) {
                    bytes = in.array();
                    p = in.arrayOffset() + in.position();
                    in.position(in.position() + length); // past the end: a corrupt page, refused here
                } else {
                    bytes = new byte[length];
                    p = 0;
                    in.get(bytes);
                }
                bits = 0;
                have = 0;
            }
        }
    }

    private static int varint(ByteBuffer in) {
        int value = 0;
        for (int shift = 0; ; shift += 7) {
            int b = in.get() & 0xff;
            value |= (b & 0x7f) << shift;
            if ((b & 0x80) == 0) {
                return value;
            }
            if (shift > 28) {
                throw new IllegalStateException("a varint longer than 5 bytes");
            }
        }
    }

    private static ByteBuffer buffer(org.apache.parquet.bytes.BytesInput bytes) {
        try {
            return bytes.toByteBuffer().slice().order(ByteOrder.LITTLE_ENDIAN);
        } catch (IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }
}
