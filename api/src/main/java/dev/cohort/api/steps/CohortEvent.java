package dev.cohort.api.steps;

import jdk.jfr.Enabled;
import jdk.jfr.Event;
import jdk.jfr.StackTrace;

/**
 * What Cohort's JDK Flight Recorder events share: off unless a recording enables them by name or
 * category (as {@code cohort run --trace} does), and without a stack trace.
 */
@Enabled(false)
@StackTrace(false)
public abstract class CohortEvent extends Event {}
