package dev.cohort.hier;

import dev.cohort.api.JobEnvironment;
import dev.cohort.gloo.GlooBackend;
import dev.cohort.gloo.GlooOptions;
import dev.cohort.runtime.GroupMeeting;
import java.time.Duration;
import java.util.Map;

/**
 * The hosts' leaders on Gloo. The only class of the engine that touches cohort-gloo, an optional
 * dependency of hier (it brings libtorch): loaded only where Gloo was chosen between hosts, which
 * {@link HierBackend#glooMissing()} allows only where its classes are on the class path.
 */
final class GlooLeaders {

    private GlooLeaders() {}

    static LeadersGroup connect(
            HierOptions options,
            Duration left,
            GlobalRanks names,
            GroupMeeting meeting,
            Map<String, String> env,
            Duration spin) {
        GlooBackend gloo = new GlooBackend(
                HierEngine.asLeaders(new GlooOptions(), options, left, names)
                        .meetingAs(meeting)
                        .networkInterface(env.get(GlooBackend.ENV_INTERFACE))
                        .agentStore("1".equals(env.get(JobEnvironment.AGENT_STORE)))
                        .spin(spin),
                Map.of());
        return HierEngine.joined(gloo, gloo::notes);
    }
}
