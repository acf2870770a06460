package dev.cohort.runtime;

import java.util.List;

/**
 * How a group's messages name its ranks. Plainly ("peer rank 1", "rank(s) [1, 2]"), or followed by
 * what each rank is elsewhere when the group is part of a larger one: hier names a host's local
 * ranks and the hosts' leaders by their global ranks ("peer rank 1 (global rank 3)").
 */
@FunctionalInterface
public interface RankNames {

    /** Ranks are named by their number in the group only. */
    RankNames PLAIN = r -> null;

    /** What rank {@code r} of the group is elsewhere ("global rank 3"), or {@code null} for nothing to add. */
    String elsewhere(int r);

    /** What follows a mention of {@code ranks}: "" or " (global rank 3, global rank 4)". */
    default String after(List<Integer> ranks) {
        StringBuilder others = new StringBuilder();
        for (int r : ranks) {
            String other = elsewhere(r);
            if (other == null) {
                return "";
            }
            others.append(others.length() == 0 ? "" : ", ").append(other);
        }
        return others.length() == 0 ? "" : " (" + others + ")";
    }

    /** "1", or "1 (global rank 3)". */
    default String rank(int r) {
        return r + after(List.of(r));
    }

    /** "[1, 2]", or "[1, 2] (global rank 3, global rank 4)". */
    default String ranks(List<Integer> ranks) {
        return ranks + after(ranks);
    }
}
