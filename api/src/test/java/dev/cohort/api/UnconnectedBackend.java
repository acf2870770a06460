package dev.cohort.api;

/** The backend named {@link Backends#NONE}, for tests of selection: connecting it fails the test. */
final class UnconnectedBackend extends DistributedBackend {

    @Override
    public String name() {
        return Backends.NONE;
    }

    @Override
    protected Connection connect() {
        throw new AssertionError("not connected in this test");
    }
}
