package dev.cohort.torch;

/** Examples addressable by index. */
public interface Samples {

    /** The number of examples. */
    long size();

    /** The examples at {@code indices}, stacked into one batch in that order. */
    MiniBatch get(long[] indices);
}
