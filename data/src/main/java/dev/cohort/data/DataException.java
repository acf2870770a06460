package dev.cohort.data;

/**
 * A dataset that cannot be read as asked: a missing file, a column not in a file, a list of the
 * wrong length, a null, a corrupt or truncated file, schemas that differ between files. The
 * message names the file, the row group and the column where they are known, and the rank that
 * hit it when the error was shared among the ranks.
 */
public final class DataException extends RuntimeException {

    private static final long serialVersionUID = 1L;

    private final String file;
    private final int rowGroup;
    private final String column;
    private final int rank;
    private final String what;

    DataException(String file, int rowGroup, String column, int rank, String what, Throwable cause) {
        super(describe(file, rowGroup, column, rank, what), cause);
        this.what = what;
        this.file = file;
        this.rowGroup = rowGroup;
        this.column = column;
        this.rank = rank;
    }

    DataException(String file, int rowGroup, String column, String what, Throwable cause) {
        this(file, rowGroup, column, -1, what, cause);
    }

    DataException(String file, int rowGroup, String column, String what) {
        this(file, rowGroup, column, -1, what, null);
    }

    /** The file, or null where the error is not about one file. */
    public String file() {
        return file;
    }

    /**
     * The row group's (an Arrow IPC file's record batch's) index within its file, or -1 where the
     * error is not about one.
     */
    public int rowGroup() {
        return rowGroup;
    }

    /** The column, or null where the error is not about one column. */
    public String column() {
        return column;
    }

    /** The rank that hit the error, or -1 where it was not shared among ranks. */
    public int rank() {
        return rank;
    }

    /** What was wrong, without the file, row group, column and rank. */
    String what() {
        return what;
    }

    private static String describe(String file, int rowGroup, String column, int rank, String what) {
        StringBuilder s = new StringBuilder();
        if (rank >= 0) {
            s.append("rank ").append(rank).append(": ");
        }
        if (file != null) {
            s.append(file);
            if (rowGroup >= 0) {
                s.append(ArrowFiles.named(file) ? ", record batch " : ", row group ")
                        .append(rowGroup);
            }
            if (column != null) {
                s.append(", column '").append(column).append('\'');
            }
            s.append(": ");
        } else if (column != null) {
            s.append("column '").append(column).append("': ");
        }
        return s.append(what).toString();
    }
}
