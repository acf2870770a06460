package dev.cohort.shm;

/** Where the engine keeps its mappings. */
final class ShmPaths {

    /** The tmpfs that holds the mappings. */
    static final String DIRECTORY = "/dev/shm";
    /** Every mapping's file name starts with this. */
    static final String PREFIX = "cohort-";

    private ShmPaths() {
    }
}
