package dev.cohort.torch;

/** The order in which an epoch visits a dataset's examples. */
public interface IndexSampler {

    /** The dataset indices this process visits in {@code epoch}, in order. */
    long[] indices(int epoch);

    /** How many indices each epoch yields. */
    long length();
}
