package dev.cohort.launcher.control;

import static org.assertj.core.api.Assertions.assertThat;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(10)
class RefereeTest {

    @Test
    void allDoneEndsTheRunWithZero() {
        Referee r = new Referee(2, 1);
        assertThat(r.begin()).isEqualTo(new Command.Start(0));
        assertThat(r.onReport(new Report.Done(0, 1))).isEmpty();
        assertThat(r.onReport(new Report.Done(0, 0))).singleElement().isInstanceOf(Command.Exit.class)
                .extracting(c -> ((Command.Exit) c).code()).isEqualTo(0);
    }

    @Test
    void firstFailureStopsEveryNodeThenRestartsWhileRestartsRemain() {
        Referee r = new Referee(2, 1);
        assertThat(r.onReport(new Report.Failed(0, 1, 3, "rank 2 on node 1 exited with code 3")))
                .containsExactly(new Command.Stop(0));
        assertThat(r.onReport(new Report.Failed(0, 1, 9, "again"))).as("second report of a node").isEmpty();
        assertThat(r.onReport(new Report.Stopped(0, 0))).containsExactly(new Command.Start(1));
        assertThat(r.onReport(new Report.Done(0, 0))).as("report on an old round").isEmpty();
        assertThat(r.onReport(new Report.Failed(1, 0, 137, "rank 0 killed by SIGKILL (exit 137)")))
                .containsExactly(new Command.Stop(1));
        assertThat(r.onReport(new Report.Failed(1, 1, 143, "rank 2 killed by SIGTERM"))).singleElement()
                .isEqualTo(new Command.Exit(137, "rank 0 killed by SIGKILL (exit 137); all 1 restart(s) used"));
    }
}
