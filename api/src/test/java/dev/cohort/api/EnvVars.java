package dev.cohort.api;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.stream.Collectors;

/** Launcher variables written compactly for tests. */
final class EnvVars {

    private EnvVars() {}

    /** {@code "K=V K=V ..."} as a (mutable) map. */
    static Map<String, String> vars(String spec) {
        return Arrays.stream(spec.split(" "))
                .map(kv -> kv.split("=", 2))
                .collect(Collectors.toMap(kv -> kv[0], kv -> kv[1]));
    }

    /** Keys and values, alternating, as a (mutable) map: for values {@link #vars} cannot hold (blank, with spaces). */
    static Map<String, String> env(String... keysAndValues) {
        Map<String, String> m = new HashMap<>();
        for (int i = 0; i < keysAndValues.length; i += 2) {
            m.put(keysAndValues[i], keysAndValues[i + 1]);
        }
        return m;
    }
}
