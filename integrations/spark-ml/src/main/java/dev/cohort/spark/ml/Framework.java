package dev.cohort.spark.ml;

import java.util.Locale;

/** The deep-learning library a fit trains with and its model predicts with. */
enum Framework {
    /** JavaCPP's libtorch through Cohort's torch integration: a {@link TorchModelFactory}. */
    TORCH(TorchModelFactory.class, MlpFactory.class.getName()),
    /** DJL's PyTorch engine through Cohort's DJL integration: a {@link DjlModelFactory}. */
    DJL(DjlModelFactory.class, DjlMlpFactory.class.getName());

    /** The interface this framework's model factories implement. */
    final Class<?> factoryType;
    /** The factory of this framework's default model, the MLP. */
    final String defaultFactory;

    Framework(Class<?> factoryType, String defaultFactory) {
        this.factoryType = factoryType;
        this.defaultFactory = defaultFactory;
    }

    /** The parameter's value: {@code torch} or {@code djl}. */
    String paramValue() {
        return name().toLowerCase(Locale.ROOT);
    }

    /**
     * The framework {@code name} names.
     *
     * @throws IllegalArgumentException naming the choices
     */
    static Framework of(String name) {
        for (Framework f : values()) {
            if (f.paramValue().equals(name)) {
                return f;
            }
        }
        throw new IllegalArgumentException("framework must be torch or djl, got " + name);
    }
}
