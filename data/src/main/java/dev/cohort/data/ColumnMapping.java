package dev.cohort.data;

import java.util.List;

/**
 * Which Parquet columns make an example: the features, a vector of {@code width} numbers, and an
 * integer label. The features are either one column of fixed-length lists of float, double, int
 * or long ({@link #list}), or several numeric scalar columns stacked into one vector in the order
 * given ({@link #scalars}). The label column is int32 or int64. Every value is read as float
 * (features) or as the label's own type; a null anywhere is an error.
 *
 * @param featureColumns the list column, or the scalar columns in vector order
 * @param stacked        true for scalar columns stacked, false for one list column
 * @param labelColumn    the label column
 */
public record ColumnMapping(List<String> featureColumns, boolean stacked, String labelColumn) {

    public ColumnMapping {
        featureColumns = List.copyOf(featureColumns);
        if (featureColumns.isEmpty() || (!stacked && featureColumns.size() != 1)) {
            throw new IllegalArgumentException(
                    "a column mapping needs one list column or at least one scalar column, not " + featureColumns);
        }
        if (labelColumn == null || labelColumn.isEmpty()) {
            throw new IllegalArgumentException("a column mapping needs a label column");
        }
    }

    /** Features from the fixed-length list column {@code features}, the label from {@code label}. */
    public static ColumnMapping list(String features, String label) {
        return new ColumnMapping(List.of(features), false, label);
    }

    /** Features from the scalar {@code features} columns in this order, the label from {@code label}. */
    public static ColumnMapping scalars(List<String> features, String label) {
        return new ColumnMapping(features, true, label);
    }
}
