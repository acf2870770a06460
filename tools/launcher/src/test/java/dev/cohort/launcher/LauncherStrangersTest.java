package dev.cohort.launcher;

import static dev.cohort.launcher.testing.Processes.awaitPid;
import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.launcher.testing.LauncherProcess;
import dev.cohort.runtime.auth.JobSecret;
import dev.cohort.testkit.JvmWorkers;
import dev.cohort.testkit.Strangers;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * Strangers on the launcher's own ports: two launchers of an elastic run on one host (loopback),
 * with a secret file, while {@link Strangers} visit every port the launchers and their workers
 * listen on — node 0's control channel and the generation store among them. Each visit must be
 * refused and logged, and the run must then finish as if nobody had come.
 */
class LauncherStrangersTest {

    @TempDir
    Path dir;

    @Test
    @Timeout(150)
    void strangersOnTheControlChannelAndTheGenerationStoreAreRefusedAndTheRunFinishes() throws Exception {
        Path secret = dir.resolve("job.secret");
        JobSecret.generate().writeTo(secret);
        Path work = dir.resolve("work");
        int masterPort = JvmWorkers.freePort();
        int controlPort = JvmWorkers.freePort();
        long seed = System.nanoTime();
        List<Strangers.Outcome> outcomes;
        LauncherProcess node0;
        LauncherProcess node1;
        try (Strangers strangers = Strangers.visitChildren(seed)) {
            node0 = node(0, masterPort, controlPort, secret, work);
            node1 = node(1, masterPort, controlPort, secret, work);
            // Both nodes' workers run: node 0's ports were open before its worker started.
            awaitPid(work, 0, 0, 60_000);
            awaitPid(work, 1, 0, 60_000);
            outcomes = strangers.finish();
        }
        Files.createFile(work.resolve("go"));
        assertThat(node0.awaitExit(60))
                .as("node 0 exit; output:\n%s", node0.output())
                .isZero();
        assertThat(node1.awaitExit(60))
                .as("node 1 exit; output:\n%s", node1.output())
                .isZero();

        int storePort = elasticStorePort(node0.output());
        Map<Integer, List<String>> byPort = Strangers.byPort(outcomes);
        assertThat(byPort).as("ports visited (seed %d): %s", seed, byPort).containsKeys(controlPort, storePort);
        assertThat(outcomes).as("visits (seed %d): %s", seed, byPort).allMatch(Strangers.Outcome::refused);
        assertThat(node0.output())
                .contains("control channel on port " + controlPort + ": refused a connection from")
                .contains(":" + storePort + ": refused a connection from");
        assertThat(node0.output()).contains("[rank 0] ENV ", "WORLD_SIZE=2", "COHORT_RESTART_COUNT=0");
        assertThat(node1.output()).contains("[rank 1] ENV ", "WORLD_SIZE=2", "COHORT_RESTART_COUNT=0");
    }

    private LauncherProcess node(int nodeRank, int masterPort, int controlPort, Path secret, Path work)
            throws IOException {
        List<String> args = new ArrayList<>(List.of("--nnodes", "2", "--node-rank", Integer.toString(nodeRank)));
        args.addAll(List.of("--master-addr", "127.0.0.1", "--master-port", Integer.toString(masterPort)));
        args.addAll(List.of("--control-port", Integer.toString(controlPort), "--elastic", "1"));
        args.addAll(List.of("--secret-file", secret.toString(), "--run-id", "strangers"));
        args.addAll(LauncherProcess.testWorker("await", work));
        return LauncherProcess.start(List.of(), args, dir.resolve("node" + nodeRank + ".out"));
    }

    /** The generation store's port, as node 0's worker was told it. */
    private static int elasticStorePort(String output) {
        Matcher m = Pattern.compile("COHORT_ELASTIC_STORE=[^ ]*:([0-9]+)").matcher(output);
        assertThat(m.find()).as("the elastic store in:\n%s", output).isTrue();
        return Integer.parseInt(m.group(1));
    }
}
