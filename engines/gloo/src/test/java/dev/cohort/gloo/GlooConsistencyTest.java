package dev.cohort.gloo;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.JvmWorkers.Result;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * The always-on consistency check on Gloo, with three processes: every kind of disagreement
 * fails on every rank at once (well before the 30 s timeout) with a message naming each rank's
 * call, and the group refuses further calls.
 */
class GlooConsistencyTest {

    @TempDir
    Path tmp;

    @Test
    @Timeout(value = 180, unit = TimeUnit.SECONDS)
    void everyDisagreementFailsOnEveryRankNamingTheCalls() {
        List<String> ports = new ArrayList<>();
        for (int i = 0; i < GlooMismatchWorker.CASES.size(); i++) {
            ports.add(Integer.toString(JvmWorkers.freePort()));
        }
        List<Result> results = JvmWorkers.run(
                3,
                r -> JvmWorkers.javaCommand(GlooMismatchWorker.class, List.of(), ports),
                r -> GlooProcessesTest.env(r, 3, 0, 3),
                tmp,
                Duration.ofSeconds(160));
        Map<String, List<String>> expected = new java.util.HashMap<>(Map.of(
                "kind", List.of("rank 0: allreduce float32[1] SUM", "rank 2: broadcast float32[1] root=0"),
                "length", List.of("rank 0: allreduce float32[1024] SUM", "rank 1: allreduce float32[1025] SUM"),
                "type", List.of("rank 1: allreduce float64[8] SUM", "rank 2: allreduce float32[8] SUM"),
                "op", List.of("rank 0: allreduce int32[4] MAX", "rank 1: allreduce int32[4] SUM"),
                "root", List.of("rank 1: broadcast int64[4] root=0", "rank 2: broadcast int64[4] root=1"),
                "order", List.of("rank 0: allreduce float32[16] SUM", "rank 1: broadcast float32[16] root=0"),
                "empty", List.of("rank 0: allreduce float32[0] SUM", "rank 2: allreduce float32[3] SUM"),
                "root-untouched",
                        List.of(
                                "rank 1: broadcast float32[1048576] root=0",
                                "rank 2: broadcast float32[1048576] root=1"),
                "op-untouched",
                        List.of("rank 0: allreduce float32[1048576] SUM", "rank 1: allreduce float32[1048576] MIN"),
                "allgatherv", List.of("rank 0: allgatherv float32 counts(total 6, hash")));
        expected.put("gather-root", List.of("rank 1: gather float32[2] root=0", "rank 2: gather float32[2] root=1"));
        expected.put(
                "alltoallv",
                List.of(
                        "alltoallv #1 (float32): ranks disagree on how much each sends to each",
                        "rank 0 sends 2 elements to rank 1, which expects 9"));
        Pattern line = Pattern.compile("CASE (\\S+) MISMATCH (\\d+) (.*) \\(sum 3\\.0\\)");
        for (Result r : results) {
            assertThat(r.output())
                    .as(JvmWorkers.describe(results))
                    .contains("DONE rank " + r.rank())
                    .doesNotContain("WRONG");
            for (String name : GlooMismatchWorker.CASES.keySet()) {
                Matcher m = line.matcher(r.output());
                String message = null;
                long ms = -1;
                while (m.find()) {
                    if (m.group(1).equals(name)) {
                        ms = Long.parseLong(m.group(2));
                        message = m.group(3);
                    }
                }
                assertThat(message)
                        .as("rank %d case %s: %s", r.rank(), name, r.output())
                        .isNotNull();
                if (!name.equals("alltoallv")) {
                    assertThat(message).contains("ranks disagree on collective #1");
                }
                for (String text : expected.get(name)) {
                    assertThat(message).as(name).contains(text);
                }
                assertThat(ms)
                        .as("case %s on rank %d failed after %d ms", name, r.rank(), ms)
                        .isLessThan(10_000);
            }
        }
    }
}
