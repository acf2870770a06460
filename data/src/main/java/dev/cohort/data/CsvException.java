package dev.cohort.data;

/**
 * A CSV file that cannot be converted: an empty file, a missing column, a line of the wrong number
 * of fields, a value that is not a number. The message starts with {@link #where} it is. Bad
 * input, so an {@link IllegalArgumentException}.
 */
public final class CsvException extends IllegalArgumentException {

    private static final long serialVersionUID = 1L;

    /**
     * Where bad input is.
     *
     * @param file   the file
     * @param line   the line (1-based), or 0 where the error is not about one line
     * @param column the column (its name, or its 0-based index in a file without a header), or null
     */
    public record Where(String file, long line, String column) {
        @Override
        public String toString() {
            return file + (line > 0 ? ", line " + line : "") + (column != null ? ", column '" + column + "'" : "");
        }
    }

    private final transient Where where;

    CsvException(String file, long line, String column, String what) {
        this(new Where(file, line, column), what);
    }

    private CsvException(Where where, String what) {
        super(where + ": " + what);
        this.where = where;
    }

    /** Where the bad input is. */
    public Where where() {
        return where;
    }
}
