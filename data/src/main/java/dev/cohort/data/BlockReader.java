package dev.cohort.data;

/**
 * Decodes a dataset's units of sharding (a Parquet row group, an Arrow record batch), each whole,
 * by its global index; one per reader thread.
 */
interface BlockReader extends AutoCloseable {

    /**
     * Unit {@code g} of the dataset, decoded.
     *
     * @throws DataException naming the file, the unit and the column
     */
    RowGroupReader.Decoded read(int g);

    @Override
    void close();

    /** The reader for {@code dataset}'s files: Arrow IPC or Parquet. */
    static BlockReader of(ParquetDataset dataset) {
        if (dataset.arrow() != null) {
            return new ArrowBatchReader(dataset);
        }
        RowGroupReader parquet = new RowGroupReader(dataset);
        return new BlockReader() {
            @Override
            public RowGroupReader.Decoded read(int g) {
                return parquet.read(g);
            }

            @Override
            public void close() {
                parquet.close();
            }
        };
    }
}
