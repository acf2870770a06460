package dev.cohort.spark.ml;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.Serializable;
import java.io.UncheckedIOException;
import java.util.List;

/**
 * What rank 0 of a fit hands back to the driver: the history of the epochs and the trained
 * weights, as one byte array ({@code $COHORT_SPARK_RESULT}): the history as JSON, then the weights.
 * The model's spec does not travel: the driver made the ranks' settings from it.
 *
 * @param spec         the model trained: its factory, features and classes
 * @param history      every epoch trained, in order (those before a resumed checkpoint included)
 * @param weights      the trained model's weights ({@link TorchWeights})
 * @param streamSeconds how long rank 0 took to receive and spill its task's rows
 */
record FitResult(ModelSpec spec, List<EpochStats> history, byte[] weights, double streamSeconds)
        implements Serializable {

    private static final ObjectMapper JSON = new ObjectMapper();

    FitResult {
        history = List.copyOf(history);
    }

    byte[] toBytes() {
        try {
            ByteArrayOutputStream bytes = new ByteArrayOutputStream(weights.length + 4096);
            DataOutputStream out = new DataOutputStream(bytes);
            byte[] history = JSON.writeValueAsBytes(this.history);
            out.writeDouble(streamSeconds);
            out.writeInt(history.length);
            out.write(history);
            out.writeInt(weights.length);
            out.write(weights);
            out.flush();
            return bytes.toByteArray();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The result {@link #toBytes} wrote, of a fit of the model {@code spec}. */
    static FitResult fromBytes(byte[] bytes, ModelSpec spec) {
        try {
            DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes));
            double streamSeconds = in.readDouble();
            byte[] history = in.readNBytes(in.readInt());
            byte[] weights = in.readNBytes(in.readInt());
            return new FitResult(
                    spec, JSON.readValue(history, new TypeReference<List<EpochStats>>() {}), weights, streamSeconds);
        } catch (IOException e) {
            throw new UncheckedIOException("rank 0's result is not a fit's result", e);
        }
    }
}
