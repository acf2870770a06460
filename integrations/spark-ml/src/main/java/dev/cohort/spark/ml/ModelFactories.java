package dev.cohort.spark.ml;

import ai.djl.nn.Block;

/** Finds and calls a model factory by its class name, with errors that say what to do. */
final class ModelFactories {

    private ModelFactories() {}

    /**
     * The factory class {@code name}, checked: on this JVM's class path, of {@code framework}'s
     * kind, with a public no-argument constructor.
     *
     * @throws IllegalArgumentException naming what is wrong
     */
    static Object load(String name, Framework framework) {
        Class<?> type;
        try {
            type = Class.forName(name, true, loader());
        } catch (ClassNotFoundException | LinkageError e) {
            throw new IllegalArgumentException(
                    "the model factory " + name + " is not on the class path of " + where() + " (" + e
                            + "): add the jar that holds it, e.g. with spark-submit --jars",
                    e);
        }
        if (!framework.factoryType.isAssignableFrom(type)) {
            Framework other = framework == Framework.TORCH ? Framework.DJL : Framework.TORCH;
            String hint = other.factoryType.isAssignableFrom(type)
                    ? ": it is a " + other.factoryType.getSimpleName() + ", so set the framework to "
                            + other.paramValue()
                    : "";
            throw new IllegalArgumentException("the model factory " + name + " does not implement "
                    + framework.factoryType.getName() + ", which framework " + framework.paramValue() + " needs"
                    + hint);
        }
        try {
            return type.getConstructor().newInstance();
        } catch (NoSuchMethodException e) {
            throw new IllegalArgumentException(
                    "the model factory " + name + " needs a public no-argument constructor", e);
        } catch (ReflectiveOperationException e) {
            throw new IllegalArgumentException("the model factory " + name + " could not be made: " + e, e);
        }
    }

    /** A fresh model from the torch factory {@code name}. */
    static TorchClassifier torch(String name, int width, int classes) {
        return made(name, ((TorchModelFactory) load(name, Framework.TORCH)).create(width, classes));
    }

    /** A fresh, uninitialized block from the DJL factory {@code name}. */
    static Block djl(String name, int width, int classes) {
        return made(name, ((DjlModelFactory) load(name, Framework.DJL)).create(width, classes));
    }

    private static <M> M made(String name, M model) {
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
