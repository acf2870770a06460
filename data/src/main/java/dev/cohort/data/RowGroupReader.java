package dev.cohort.data;

import java.io.IOException;
import java.util.ArrayList;
import java.util.List;
import org.apache.hadoop.fs.Path;
import org.apache.parquet.column.ColumnDescriptor;
import org.apache.parquet.column.ColumnReader;
import org.apache.parquet.column.impl.ColumnReadStoreImpl;
import org.apache.parquet.column.page.PageReadStore;
import org.apache.parquet.column.page.PageReader;
import org.apache.parquet.example.data.simple.convert.GroupRecordConverter;
import org.apache.parquet.hadoop.ParquetFileReader;
import org.apache.parquet.hadoop.metadata.BlockMetaData;
import org.apache.parquet.hadoop.metadata.ColumnChunkMetaData;
import org.apache.parquet.hadoop.metadata.ColumnPath;
import org.apache.parquet.hadoop.util.HadoopInputFile;
import org.apache.parquet.io.api.GroupConverter;
import org.apache.parquet.schema.MessageType;
import org.apache.parquet.schema.Type;

/**
 * Decodes whole row groups of a dataset's files straight into primitive arrays, never a record or
 * a boxed value: in bulk with {@link ChunkDecoder} where the footer announces only the encodings it
 * decodes (plain and dictionary values, RLE levels: what Parquet's writers use by default), else
 * with Parquet's ColumnReader, a value at a time.
 * One per reader thread: it keeps the last file open and reads only the mapped columns.
 */
final class RowGroupReader implements AutoCloseable {

    /** A decoded row group: {@code rows x width} features, row after row, and a label per row. */
    record Decoded(int rows, float[] features, long[] labels) {
        static Decoded allocate(int rows, int width) {
            return new Decoded(rows, new float[Math.multiplyExact(rows, width)], new long[rows]);
        }
    }

    private final ParquetDataset dataset;
    private final MessageType projection;
    private final GroupConverter converter;
    private final ChunkDecoder decoder = new ChunkDecoder();
    private ParquetFileReader open;
    private int openFile = -1;

    RowGroupReader(ParquetDataset dataset) {
        this.dataset = dataset;
        List<Type> fields = new ArrayList<>();
        for (String c : dataset.columns.featureColumns()) {
            fields.add(dataset.schema.getType(c));
        }
        fields.add(dataset.schema.getType(dataset.columns.labelColumn()));
        this.projection = new MessageType(dataset.schema.getName(), fields);
        // The column readers ask for a converter tree but call it only on writeCurrentValueToConverter,
        // which this class never does.
        this.converter = new GroupRecordConverter(projection).getRootConverter();
    }

    /** Row group {@code g} of the dataset (its global index), decoded. */
    Decoded read(int g) {
        ParquetDataset.RowGroup group = dataset.rowGroup(g);
        String file = dataset.files().get(group.file());
        PageReadStore pages = pages(group, file);
        if (inBulk(group)) {
            try {
                return decodeInBulk(pages, file, group);
            } catch (ChunkDecoder.Unsupported e) {
                pages = pages(group, file); // a page the footer did not announce: read it all again
            }
        }
        return decodeByValue(pages, file, group);
    }

    private PageReadStore pages(ParquetDataset.RowGroup group, String file) {
        PageReadStore pages;
        try {
            pages = reader(group.file()).readRowGroup(group.index());
        } catch (IOException | RuntimeException e) {
            throw new DataException(
                    file, group.index(), null, "cannot read the row group's pages (corrupt or truncated): " + e, e);
        }
        if (pages == null || pages.getRowCount() != group.rows()) {
            throw new DataException(
                    file,
                    group.index(),
                    null,
                    "the row group is missing or holds " + (pages == null ? 0 : pages.getRowCount())
                            + " rows where the footer says " + group.rows());
        }
        return pages;
    }

    /** Whether the footer announces only encodings that {@link ChunkDecoder} decodes, for every mapped column. */
    private boolean inBulk(ParquetDataset.RowGroup group) {
        List<ColumnDescriptor> leaves = new ArrayList<>(dataset.featureLeaves());
        leaves.add(dataset.labelLeaf());
        for (ColumnDescriptor leaf : leaves) {
            ColumnChunkMetaData chunk = chunk(open.getRowGroups().get(group.index()), leaf);
            if (chunk == null || !ChunkDecoder.decodes(chunk, leaf)) {
                return false;
            }
        }
        return true;
    }

    private static ColumnChunkMetaData chunk(BlockMetaData block, ColumnDescriptor leaf) {
        ColumnPath path = ColumnPath.get(leaf.getPath());
        for (ColumnChunkMetaData c : block.getColumns()) {
            if (c.getPath().equals(path)) {
                return c;
            }
        }
        return null;
    }

    private Decoded decodeInBulk(PageReadStore pages, String file, ParquetDataset.RowGroup group)
            throws ChunkDecoder.Unsupported {
        int rows = Math.toIntExact(group.rows());
        int width = dataset.width();
        Decoded decoded = Decoded.allocate(rows, width);
        float[] features = decoded.features();
        List<ColumnDescriptor> leaves = dataset.featureLeaves();
        for (int c = 0; c < leaves.size(); c++) {
            ChunkDecoder.Where where = new ChunkDecoder.Where(
                    file, group.index(), dataset.columns.featureColumns().get(c));
            PageReader chunk = pages.getPageReader(leaves.get(c));
            if (dataset.columns.stacked()) {
                int at = c;
                bulk(chunk, leaves.get(c), rows, 1, false, where, (d, first, count) -> {
                    for (int k = 0; k < count; k++) {
                        features[(first + k) * width + at] = d.floats[k];
                    }
                });
            } else {
                bulk(
                        chunk,
                        leaves.get(c),
                        rows,
                        width,
                        false,
                        where,
                        (d, first, count) -> System.arraycopy(d.floats, 0, features, first, count));
            }
        }
        ChunkDecoder.Where where = new ChunkDecoder.Where(file, group.index(), dataset.columns.labelColumn());
        bulk(
                pages.getPageReader(dataset.labelLeaf()),
                dataset.labelLeaf(),
                rows,
                1,
                true,
                where,
                (d, first, count) -> System.arraycopy(d.longs, 0, decoded.labels(), first, count));
        return decoded;
    }

    private void bulk(
            PageReader chunk,
            ColumnDescriptor leaf,
            int rows,
            int width,
            boolean asLongs,
            ChunkDecoder.Where where,
            ChunkDecoder.Sink sink)
            throws ChunkDecoder.Unsupported {
        try {
            decoder.decode(chunk, leaf, rows, width, asLongs, sink, where);
        } catch (DataException e) {
            throw e;
        } catch (RuntimeException e) {
            throw where.error("cannot decode the column (corrupt?): " + e);
        }
    }

    /** The ColumnReader's way, a value at a time: any encoding Parquet reads. */
    private Decoded decodeByValue(PageReadStore pages, String file, ParquetDataset.RowGroup group) {
        ColumnReadStoreImpl store = new ColumnReadStoreImpl(pages, converter, projection, null);
        Decoded decoded = Decoded.allocate(Math.toIntExact(group.rows()), dataset.width());
        int rows = decoded.rows();
        int width = dataset.width();
        float[] features = decoded.features();
        long[] labels = decoded.labels();
        List<ColumnDescriptor> leaves = dataset.featureLeaves();
        for (int c = 0; c < leaves.size(); c++) {
            String column = dataset.columns.featureColumns().get(c);
            ColumnReader reader = columnReader(store, leaves.get(c), file, group, column);
            try {
                if (dataset.columns.stacked()) {
                    readScalars(reader, rows, features, c, width, file, group, column);
                } else {
                    readLists(reader, rows, features, width, file, group, column);
                }
            } catch (DataException e) {
                throw e;
            } catch (RuntimeException e) {
                throw new DataException(file, group.index(), column, "cannot decode the column (corrupt?): " + e, e);
            }
        }
        String labelColumn = dataset.columns.labelColumn();
        ColumnReader label = columnReader(store, dataset.labelLeaf(), file, group, labelColumn);
        try {
            boolean int64 = dataset.longLabels();
            for (int row = 0; row < rows; row++) {
                checkPresent(label, row, rows, file, group, labelColumn);
                labels[row] = int64 ? label.getLong() : label.getInteger();
                label.consume();
            }
        } catch (DataException e) {
            throw e;
        } catch (RuntimeException e) {
            throw new DataException(file, group.index(), labelColumn, "cannot decode the column (corrupt?): " + e, e);
        }
        return decoded;
    }

    private static ColumnReader columnReader(
            ColumnReadStoreImpl store,
            ColumnDescriptor leaf,
            String file,
            ParquetDataset.RowGroup group,
            String column) {
        try {
            return store.getColumnReader(leaf);
        } catch (RuntimeException e) {
            throw new DataException(file, group.index(), column, "cannot decode the column (corrupt?): " + e, e);
        }
    }

    private static void readScalars(
            ColumnReader reader,
            int rows,
            float[] features,
            int at,
            int width,
            String file,
            ParquetDataset.RowGroup group,
            String column) {
        for (int row = 0; row < rows; row++) {
            checkPresent(reader, row, rows, file, group, column);
            features[row * width + at] = value(reader);
            reader.consume();
        }
    }

    /** Rows of a list column: a value with repetition level 0 starts a row; each row must hold {@code width} values. */
    private static void readLists(
            ColumnReader reader,
            int rows,
            float[] features,
            int width,
            String file,
            ParquetDataset.RowGroup group,
            String column) {
        long total = reader.getTotalValueCount();
        long read = 0;
        int maxDefinition = reader.getDescriptor().getMaxDefinitionLevel();
        for (int row = 0; row < rows; row++) {
            if (read >= total) {
                throw new DataException(file, group.index(), column, "the column ends at row " + row + " of " + rows);
            }
            int length = 0;
            do {
                if (reader.getCurrentDefinitionLevel() < maxDefinition) {
                    throw new DataException(
                            file,
                            group.index(),
                            column,
                            "row " + row + " holds a null or an empty list; every row needs " + width + " numbers");
                }
                if (length < width) {
                    features[row * width + length] = value(reader);
                }
                length++;
                reader.consume();
                read++;
            } while (read < total && reader.getCurrentRepetitionLevel() > 0);
            if (length != width) {
                throw new DataException(
                        file,
                        group.index(),
                        column,
                        "row " + row + " holds a list of " + length + " numbers where the dataset's are of " + width);
            }
        }
    }

    private static void checkPresent(
            ColumnReader reader, int row, int rows, String file, ParquetDataset.RowGroup group, String column) {
        if (reader.getCurrentDefinitionLevel() < reader.getDescriptor().getMaxDefinitionLevel()) {
            throw new DataException(file, group.index(), column, "row " + row + " of " + rows + " is null");
        }
    }

    private static float value(ColumnReader reader) {
        return switch (reader.getDescriptor().getPrimitiveType().getPrimitiveTypeName()) {
            case FLOAT -> reader.getFloat();
            case DOUBLE -> (float) reader.getDouble();
            case INT32 -> reader.getInteger();
            case INT64 -> reader.getLong();
            default -> throw new IllegalStateException("not numeric: " + reader.getDescriptor());
        };
    }

    private ParquetFileReader reader(int file) throws IOException {
        if (openFile != file) {
            close();
            String name = dataset.files().get(file);
            try {
                open = ParquetFileReader.open(HadoopInputFile.fromPath(new Path(name), dataset.conf));
            } catch (IOException | RuntimeException e) {
                throw new DataException(name, -1, null, "cannot open it (missing, or not Parquet): " + e, e);
            }
            open.setRequestedSchema(projection);
            openFile = file;
        }
        return open;
    }

    @Override
    public void close() {
        if (open != null) {
            try {
                open.close();
            } catch (IOException e) {
                // a reader's close only releases the stream: nothing to recover
            }
            open = null;
            openFile = -1;
        }
    }
}
