package dev.cohort.api;

import java.util.Map;
import java.util.Objects;

/**
 * What a training program hands to {@link DistributedBackend#distribute}: the seed's
 * {@code model, optimizer, model_parameters, training_data, lr_scheduler, **kwargs}. Any of them
 * may be {@code null}. The type parameters carry through to the result, so the wrapped values
 * keep the types the program uses.
 *
 * @param <M> model type
 * @param <O> optimizer type
 * @param <D> training data type
 * @param <S> learning-rate scheduler type
 */
public record DistributeRequest<M, O, D, S>(
        M model, O optimizer, Object modelParameters, D trainingData, S lrScheduler, Map<String, Object> options) {

    public DistributeRequest {
        options = Map.copyOf(Objects.requireNonNull(options, "options"));
    }

    public static <M, O, D, S> DistributeRequest<M, O, D, S> of(M model, O optimizer, D trainingData, S lrScheduler) {
        return new DistributeRequest<>(model, optimizer, null, trainingData, lrScheduler, Map.of());
    }

    /** The same request with the parameters to optimize named explicitly. */
    public DistributeRequest<M, O, D, S> withModelParameters(Object parameters) {
        return new DistributeRequest<>(model, optimizer, parameters, trainingData, lrScheduler, options);
    }

    /** The same request with other training data (e.g. batches of another size). */
    public DistributeRequest<M, O, D, S> withTrainingData(D data) {
        return new DistributeRequest<>(model, optimizer, modelParameters, data, lrScheduler, options);
    }

    /** The same request with one more integration-specific option (the seed's {@code **kwargs}). */
    public DistributeRequest<M, O, D, S> withOption(String key, Object value) {
        Map<String, Object> more = new java.util.HashMap<>(options);
        more.put(Objects.requireNonNull(key, "key"), Objects.requireNonNull(value, "value"));
        return new DistributeRequest<>(model, optimizer, modelParameters, trainingData, lrScheduler, more);
    }

    /** The inputs unchanged, as a result: what a single worker trains with. */
    public Distributed<M, O, D, S> unchanged() {
        return new Distributed<>(model, optimizer, trainingData, lrScheduler);
    }
}
