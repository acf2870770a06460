package dev.cohort.examples;

import java.util.HashMap;
import java.util.Map;

/** What a launcher tells a worker process it starts, for the tests that start workers themselves. */
final class RankEnvironment {

    private RankEnvironment() {}

    /**
     * The variables of rank {@code rank} of {@code world} whose rank 0 listens on
     * {@code masterAddr:masterPort} (MASTER_ADDR, MASTER_PORT, RANK, WORLD_SIZE), and {@code more}.
     */
    static Map<String, String> of(String masterAddr, int masterPort, int rank, int world, Map<String, String> more) {
        Map<String, String> env = new HashMap<>(more);
        env.put("MASTER_ADDR", masterAddr);
        env.put("MASTER_PORT", Integer.toString(masterPort));
        env.put("RANK", Integer.toString(rank));
        env.put("WORLD_SIZE", Integer.toString(world));
        return env;
    }
}
