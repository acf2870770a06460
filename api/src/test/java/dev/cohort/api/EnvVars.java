package dev.cohort.api;

import java.util.Arrays;
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
}
