package dev.cohort.runtime;

/**
 * How an engine makes the subgroups of its groups ({@link AbstractProcessGroup#makesSubgroups}):
 * connects this rank to the other members of {@code spec}, in resources named by {@code scope},
 * which is unique in the job and the same on every member ("world/split-0-color-1").
 */
@FunctionalInterface
public interface SubgroupMaker {

    AbstractProcessGroup make(String scope, Subgroup spec);

    /** A name for {@code scope} of at most 17 characters of {@code [a-z0-9]}, for resources with short names (shm files). */
    static String shortName(String scope) {
        long h = 0xcbf29ce484222325L;
        for (int i = 0; i < scope.length(); i++) {
            h = (h ^ scope.charAt(i)) * 0x100000001b3L;
        }
        return "g" + Long.toHexString(h);
    }
}
