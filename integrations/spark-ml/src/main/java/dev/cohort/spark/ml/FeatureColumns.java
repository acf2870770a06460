package dev.cohort.spark.ml;

import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.max;
import static org.apache.spark.sql.functions.min;
import static org.apache.spark.sql.functions.size;
import static org.apache.spark.sql.functions.sum;
import static org.apache.spark.sql.functions.when;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.ml.functions;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.ArrayType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.NumericType;
import org.apache.spark.sql.types.StructField;
import org.apache.spark.sql.types.StructType;

/**
 * The features of a DataFrame as one vector column, whatever form they come in: a Spark ML
 * {@code Vector} column (as {@code VectorAssembler} makes), an {@code array} of numbers, or
 * several numeric columns; and the checks {@code fit} runs before any task starts.
 */
final class FeatureColumns {

    /** The name of the vector column {@link #vector} adds. */
    static final String VECTOR = "__cohort_features";

    private FeatureColumns() {}

    /**
     * The features as one vector: the column {@code features}, or the numeric columns {@code
     * scalars} when there are some.
     *
     * @throws IllegalArgumentException naming a missing column or one of a type that is not features
     */
    static Column vector(StructType schema, String features, String[] scalars) {
        if (scalars != null && scalars.length > 0) {
            List<Column> columns = new ArrayList<>();
            for (String name : scalars) {
                DataType type = field(schema, name, "featureCols").dataType();
                if (!(type instanceof NumericType)) {
                    throw new IllegalArgumentException("feature column " + name + " is " + type.simpleString()
                            + ", not numeric: featureCols names numeric columns");
                }
                columns.add(col(name).cast("double"));
            }
            return functions.array_to_vector(org.apache.spark.sql.functions.array(columns.toArray(new Column[0])));
        }
        DataType type = field(schema, features, "featuresCol").dataType();
        if (type.equals(SQLDataTypes.VectorType())) {
            return col(features);
        }
        if (type instanceof ArrayType array && array.elementType() instanceof NumericType) {
            return functions.array_to_vector(col(features).cast("array<double>"));
        }
        throw new IllegalArgumentException("features column " + features + " is " + type.simpleString()
                + ": it must be a vector (as VectorAssembler makes), an array of numbers, or set featureCols to "
                + "numeric columns");
    }

    /** Checks that {@code label} is a numeric column of {@code schema}. */
    static void checkLabel(StructType schema, String label) {
        DataType type = field(schema, label, "labelCol").dataType();
        if (!(type instanceof NumericType)) {
            throw new IllegalArgumentException("label column " + label + " is " + type.simpleString()
                    + ", not numeric: labels are class " + "numbers 0, 1, ... (StringIndexer turns strings into them)");
        }
    }

    /** What {@code fit} learns of the data in one pass: rows, features per row, classes. */
    record Shape(long rows, int width, int classes) {}

    /**
     * Checks the prepared rows (the vector {@link #VECTOR}, the label {@code label} as double) in
     * one pass: no nulls, every vector as long as the others, labels whole numbers from 0.
     *
     * @throws IllegalArgumentException naming the column and what is wrong
     */
    static Shape inspect(Dataset<Row> prepared, String features, String label) {
        Column length = when(col(VECTOR).isNotNull(), size(functions.vector_to_array(col(VECTOR), "float32")));
        Row r = prepared.agg(
                        org.apache.spark.sql.functions.count(lit(1)),
                        sum(when(col(VECTOR).isNull(), 1).otherwise(0)),
                        sum(when(col(label).isNull(), 1).otherwise(0)),
                        min(length),
                        max(length),
                        min(col(label)),
                        max(col(label)),
                        sum(when(col(label).notEqual(org.apache.spark.sql.functions.floor(col(label))), 1)
                                .otherwise(0)))
                .first();
        long rows = r.getLong(0);
        if (rows == 0) {
            throw new IllegalArgumentException("the DataFrame has no rows: nothing to fit");
        }
        if (!r.isNullAt(1) && r.getLong(1) > 0) {
            throw new IllegalArgumentException(r.getLong(1) + " of " + rows + " rows have no features (null in "
                    + features + "): drop or fill them first (na().drop())");
        }
        if (!r.isNullAt(2) && r.getLong(2) > 0) {
            throw new IllegalArgumentException(r.getLong(2) + " of " + rows + " rows have no label (null in " + label
                    + "): drop or fill them first (na().drop())");
        }
        int shortest = r.getInt(3);
        int longest = r.getInt(4);
        if (shortest != longest) {
            throw new IllegalArgumentException("the feature vectors of " + features + " differ in length, from "
                    + shortest + " to " + longest + ": every row needs as many features");
        }
        if (shortest == 0) {
            throw new IllegalArgumentException("the feature vectors of " + features + " are empty");
        }
        double lowest = r.getDouble(5);
        double highest = r.getDouble(6);
        if (r.getLong(7) > 0 || lowest < 0) {
            throw new IllegalArgumentException("the labels of " + label + " must be class numbers 0, 1, ..., found "
                    + (lowest < 0 ? lowest : "fractional values") + " (StringIndexer makes class numbers)");
        }
        if (highest >= Integer.MAX_VALUE) {
            throw new IllegalArgumentException("label " + highest + " of " + label + " is too large a class number");
        }
        return new Shape(rows, shortest, (int) highest + 1);
    }

    private static StructField field(StructType schema, String name, String param) {
        for (StructField f : schema.fields()) {
            if (f.name().equals(name)) {
                return f;
            }
        }
        throw new IllegalArgumentException("the DataFrame has no column " + name + " (" + param + "); its columns: "
                + String.join(", ", schema.fieldNames()));
    }
}
