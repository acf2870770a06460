package dev.cohort.torch;

/**
 * A worker process of the overlap test: {@link OverlapTraining#measure} on the backend named
 * {@code args[0]}; prints {@link OverlapTraining.Overlap#line()} and a readable line.
 */
public final class OverlapWorker {

    public static void main(String[] args) {
        ProcessRanks.asRank(args[0], backend -> {
            OverlapTraining.Overlap o = OverlapTraining.measure(backend, OverlapTest.BLOCKS, OverlapTest.STEPS);
            System.out.println(o.line());
            System.out.println(o.describe());
        });
    }
}
