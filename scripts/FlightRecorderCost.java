import dev.cohort.api.collective.Collective;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.OpKind;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.runtime.flight.FlightRecorder;
import java.nio.file.Files;
import java.nio.file.Path;

/**
 * What the flight recorder costs a collective: nanoseconds per call put on record, marked started
 * by the engine and marked settled (FlightRecorder.issued + started + settled), on a ring in memory and on a memory-mapped file as
 * cohort run makes one, JFR's Cohort events off. Median of 7 runs of 2 M calls after a warm-up.
 *
 * Run: java -cp runtime/target/classes:api/target/classes scripts/FlightRecorderCost.java
 */
public class FlightRecorderCost {
    public static void main(String[] args) throws Exception {
        Collective call = new Collective(
                OpKind.ALLREDUCE, 0, DenseBuffer.of(new float[1024]), null, ReduceOp.SUM, -1, null);
        Path dir = Files.createTempDirectory("flight-cost");
        FlightRecorder memory = FlightRecorder.inMemory(0, 2, FlightRecorder.DEFAULT_CAPACITY, "tcp");
        FlightRecorder file =
                FlightRecorder.inFile(dir.resolve("rank-0.flight"), 0, 2, FlightRecorder.DEFAULT_CAPACITY, "tcp");
        for (FlightRecorder r : new FlightRecorder[] {memory, file}) {
            long[] ns = new long[7];
            run(r, call, 2_000_000); // warm-up
            for (int i = 0; i < ns.length; i++) {
                ns[i] = run(r, call, 2_000_000);
            }
            java.util.Arrays.sort(ns);
            System.out.printf("%s: %.1f ns per call (median of 7; min %.1f, max %.1f)%n",
                    r.file().isPresent() ? "memory-mapped file" : "memory", ns[3] / 2e6, ns[0] / 2e6, ns[6] / 2e6);
        }
        Files.deleteIfExists(dir.resolve("rank-0.flight"));
        Files.deleteIfExists(dir);
    }

    private static long run(FlightRecorder r, Collective call, int calls) {
        long start = System.nanoTime();
        for (int i = 0; i < calls; i++) {
            long ticket = r.issued(call);
            r.started(ticket, System.nanoTime());
            r.settled(ticket, false);
        }
        return System.nanoTime() - start;
    }
}
