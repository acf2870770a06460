package dev.cohort.api;

/** The version of Cohort on the class path, from its jar's manifest. */
public final class CohortVersion {

    private CohortVersion() {}

    /** E.g. {@code 0.3.0}; {@code "(unreleased build)"} when the classes are not in a released jar. */
    public static String get() {
        String v = CohortVersion.class.getPackage().getImplementationVersion();
        return v != null ? v : "(unreleased build)";
    }
}
