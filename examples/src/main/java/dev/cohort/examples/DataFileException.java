package dev.cohort.examples;

import java.io.IOException;
import java.nio.file.Path;

/** A data file that is missing, truncated, corrupt or not what it should be; the message names the file. */
public final class DataFileException extends IOException {

    private static final long serialVersionUID = 1L;

    private final transient Path file;

    public DataFileException(Path file, String problem) {
        this(file, problem, null);
    }

    public DataFileException(Path file, String problem, Throwable cause) {
        super(file + ": " + problem, cause);
        this.file = file;
    }

    /** The file that was wrong. */
    public Path file() {
        return file;
    }
}
