package dev.cohort.spark.ml;

/** Finds and calls a {@link TorchModelFactory} by its class name, with errors that say what to do. */
final class ModelFactories {

    private ModelFactories() {}

    /**
     * The factory class {@code name}, checked: on this JVM's class path, a {@link TorchModelFactory}
     * with a public no-argument constructor.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    static TorchModelFactory load(String name) {
        Class<?> type;
        try {
            type = Class.forName(name, true, loader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalArgumentException(
                    "the model factory " + name + " is not on the class path of " + where() + " (" + e
                            + "): add the jar that holds it, e.g. with spark-submit --jars",
                    e);
        }
        if (!TorchModelFactory.class.isAssignableFrom(type)) {
            throw new IllegalArgumentException(
                    "the model factory " + name + " does not implement " + TorchModelFactory.class.getName());
        }
        try {
            return (TorchModelFactory) type.getConstructor().newInstance();
        } catch (NoSuchMethodException e) {
            throw new IllegalArgumentException(
                    "the model factory " + name + " needs a public no-argument constructor", e);
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException("the model factory " + name + " could not be made: " + e, e);
        }
    }

    /** A fresh model from the factory {@code name}. */
    static TorchClassifier create(String name, int width, int classes) {
        TorchClassifier model = load(name).create(width, classes);
        if (model == null) {
            throw new IllegalArgumentException("the model factory " + name + " returned no model");
        }
        return model;
    }

    private static ClassLoader loader() {
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        return context != null ? context : ModelFactories.class.getClassLoader();
    }

    private static String where() {
        return System.getenv("COHORT_SPARK_WORK") != null ? "the executor's rank" : "this JVM";
    }
}
