package dev.cohort.api;

/** A backend that is only named, for tests of selection: connecting it fails the test. */
final class UnconnectedBackend extends DistributedBackend {

    private final String name;

    UnconnectedBackend(String name) {
        this.name = name;
    }

    @Override
    public String name() {
        return name;
    }

    @Override
    protected Connection connect() {
        throw new AssertionError("not connected in this test");
    }
}
