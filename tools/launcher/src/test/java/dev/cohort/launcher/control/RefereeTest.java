package dev.cohort.launcher.control;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.List;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class RefereeTest {

    @Test
    void allDoneEndsTheRunWithZero() {
        Referee r = new Referee(2, 1);
        assertThat(r.begin(List.of(2, 2))).isEqualTo(new Command.Start(0));
        assertThat(r.onReport(new Report.Done(0, 1))).isEmpty();
        assertThat(r.onReport(new Report.Done(0, 0)))
                .singleElement()
                .isInstanceOf(Command.Exit.class)
                .extracting(c -> ((Command.Exit) c).code())
                .isEqualTo(0);
    }

    @Test
    void firstFailureStopsEveryNodeThenRestartsWhileRestartsRemain() {
        Referee r = new Referee(2, 1);
        r.begin(List.of(2, 2));
        assertThat(r.onReport(new Report.Failed(0, 1, 3, "rank 2 on node 1 exited with code 3")))
                .containsExactly(new Command.Stop(0));
        assertThat(r.onReport(new Report.Failed(0, 1, 9, "again")))
                .as("second report of a node")
                .isEmpty();
        assertThat(r.onReport(new Report.Stopped(0, 0))).containsExactly(new Command.Start(1));
        assertThat(r.onReport(new Report.Done(0, 0)))
                .as("report on an old round")
                .isEmpty();
        assertThat(r.onReport(new Report.Failed(1, 0, 137, "rank 0 killed by SIGKILL (exit 137)")))
                .containsExactly(new Command.Stop(1));
        assertThat(r.onReport(new Report.Failed(1, 1, 143, "rank 2 killed by SIGTERM")))
                .singleElement()
                .isEqualTo(new Command.Exit(137, "rank 0 killed by SIGKILL (exit 137); all 1 restart(s) used"));
    }

    @Test
    void anElasticRunRegroupsWhileEnoughWorkersAreLeftThenFailsTheRound() {
        Referee r = new Referee(2, 1, 2);
        r.begin(List.of(2, 2));
        assertThat(r.onReport(new Report.Lost(0, 1, 2, 137, "rank 2 on node 1 killed")))
                .containsExactly(new Command.Regroup(
                        0,
                        1,
                        List.of(new Command.Member(0, 0), new Command.Member(1, 0), new Command.Member(3, 1)),
                        "rank 2 on node 1 killed"));
        assertThat(r.onReport(new Report.Lost(0, 1, 2, 137, "again")))
                .as("a rank lost twice")
                .isEmpty();
        assertThat(r.onReport(new Report.Lost(0, 0, 0, 1, "rank 0 exited with code 1")))
                .singleElement()
                .isEqualTo(new Command.Regroup(
                        0,
                        2,
                        List.of(new Command.Member(1, 0), new Command.Member(3, 1)),
                        "rank 0 exited with code 1"));
        // A third loss would leave one worker, below --elastic 2: the round fails and restarts.
        assertThat(r.onReport(new Report.Lost(0, 1, 3, 137, "rank 3 on node 1 killed")))
                .containsExactly(new Command.Stop(0));
        assertThat(r.onReport(new Report.Done(0, 1))).isEmpty();
        assertThat(r.onReport(new Report.Stopped(0, 0))).containsExactly(new Command.Start(1));
        // The restart begins with every worker again.
        assertThat(r.onReport(new Report.Lost(1, 0, 1, 137, "rank 1 killed")))
                .singleElement()
                .extracting(c -> ((Command.Regroup) c).members())
                .asList()
                .hasSize(3);
    }

    @Test
    void anElasticRunGoesOnWithoutALostNodeAndEndsWhenTheOthersAreDone() {
        Referee r = new Referee(2, 0, 2);
        r.begin(List.of(2, 2));
        assertThat(r.onNodeLost(1, "lost contact with the launcher of node 1"))
                .hasValueSatisfying(cs -> assertThat(cs)
                        .containsExactly(new Command.Regroup(
                                0,
                                1,
                                List.of(new Command.Member(0, 0), new Command.Member(1, 0)),
                                "lost contact with the launcher of node 1")));
        assertThat(r.onReport(new Report.Done(0, 0)))
                .singleElement()
                .isEqualTo(new Command.Exit(0, "all workers finished (2 of them in generation 1)"));
    }

    @Test
    void nodesThatAreNotInTheRunNeedNotReport() {
        Referee r = new Referee(3, 0, 3);
        r.begin(List.of(2, 0, 2)); // --nnodes 2:3, node 1 did not join in time
        assertThat(r.onReport(new Report.Lost(0, 2, 2, 137, "rank 2 on node 2 killed")))
                .singleElement()
                .extracting(c -> ((Command.Regroup) c).members())
                .asList()
                .containsExactly(new Command.Member(0, 0), new Command.Member(1, 0), new Command.Member(3, 2));
        assertThat(r.onReport(new Report.Done(0, 2))).isEmpty();
        assertThat(r.onReport(new Report.Done(0, 0)))
                .singleElement()
                .isEqualTo(new Command.Exit(0, "all workers finished (3 of them in generation 1)"));
    }

    @Test
    void aLostNodeEndsARunThatIsNotElasticOrWouldFallBelowTheMinimum() {
        Referee plain = new Referee(2, 0);
        plain.begin(List.of(2, 2));
        assertThat(plain.onNodeLost(1, "gone")).isEmpty();
        Referee elastic = new Referee(2, 0, 3);
        elastic.begin(List.of(2, 2));
        assertThat(elastic.onNodeLost(1, "gone")).isEmpty();
    }

    @Test
    void wireFormatsCarryTheElasticCommandsAndReports() {
        Command.Regroup g = new Command.Regroup(
                2,
                3,
                List.of(new Command.Member(0, 0), new Command.Member(5, 2)),
                "rank 3 on node 1 killed by SIGKILL (exit 137)");
        assertThat(Wire.parseCommand(Wire.format(g))).isEqualTo(g);
        Command.Job job = new Command.Job(17, 1, 4, List.of(0, 2), "192.0.2.1:40000", List.of(0, 1));
        assertThat(Wire.parseCommand(Wire.format(job))).isEqualTo(job);
        Command.Job plain = new Command.Job(17, 1, 4, List.of(0, 2, 4), "", List.of(0, 2));
        assertThat(Wire.parseCommand(Wire.format(plain))).isEqualTo(plain);
        Report.Lost lost = new Report.Lost(1, 2, 5, 137, "rank 5 on node 2 killed by SIGKILL (exit 137)");
        assertThat(Wire.parseReport(Wire.format(lost), 2)).isEqualTo(lost);
    }
}
