package dev.cohort.spark.ml;

import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.io.UncheckedIOException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.api.java.JavaSparkContext;
import org.apache.spark.broadcast.Broadcast;
import org.apache.spark.ml.Model;
import org.apache.spark.ml.linalg.SQLDataTypes;
import org.apache.spark.ml.param.ParamMap;
import org.apache.spark.ml.util.DefaultParamsReader;
import org.apache.spark.ml.util.DefaultParamsReader$;
import org.apache.spark.ml.util.DefaultParamsWriter$;
import org.apache.spark.ml.util.MLReader;
import org.apache.spark.ml.util.MLWritable;
import org.apache.spark.ml.util.MLWriter;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.StructType;
import scala.Option;

/**
 * What {@link CohortEstimator#fit} returns: the trained classifier, a Spark ML {@code Model}.
 * {@code transform} adds the predicted class ({@code predictionCol}, a double) and the class
 * probabilities ({@code probabilityCol}, a vector; none when it is set empty), predicting in
 * batches in each partition with the model loaded once per executor JVM. {@code write().save(path)}
 * and {@link #load} keep it on any Hadoop path (Spark's metadata, the training history, then the
 * weights in the framework's own format: libtorch's archive, or DJL's parameter file), also as a
 * stage of a saved {@code PipelineModel}.
 */
public final class CohortModel extends Model<CohortModel> implements CohortParams<CohortModel>, MLWritable {

    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();

    private final String uid;
    private final Declared declared;
    private final FitResult fitted;

    CohortModel(String uid, FitResult fitted) {
        this.uid = uid;
        this.declared = new Declared(this);
        this.fitted = fitted;
    }

    @Override
    public String uid() {
        return uid;
    }

    /** Features per row the model takes. */
    public int numFeatures() {
        return fitted.spec().width();
    }

    /** Classes the model tells apart (0 to {@code numClasses() - 1}). */
    public int numClasses() {
        return fitted.spec().classes();
    }

    /** Every epoch of the fit: loss, accuracy on the rows trained on, time, samples per second. */
    public List<EpochStats> history() {
        return fitted.history();
    }

    /** How long rank 0's task took to stream its rows to its rank during the fit, in seconds. */
    public double streamSeconds() {
        return fitted.streamSeconds();
    }

    /** What the model was made from: its factory, features and classes. */
    ModelSpec spec() {
        return fitted.spec();
    }

    /**
     * The trained weights in the framework's own format: libtorch's archive for torch (load them
     * into the factory's model with {@code Module.load}), DJL's parameters for djl ({@code
     * Block.loadParameters}).
     */
    public byte[] weights() {
        return fitted.weights().clone();
    }

    @Override
    public Declared declared() {
        return declared;
    }

    @Override
    public StructType transformSchema(StructType schema) {
        FeatureColumns.vector(schema, getFeaturesCol(), getFeatureCols());
        return outputSchema(schema, getPredictionCol(), getProbabilityCol());
    }

    /** {@code schema} with the prediction and, unless {@code probability} is empty, probability columns. */
    static StructType outputSchema(StructType schema, String prediction, String probability) {
        for (String name : new String[] {prediction, probability}) {
            if (!name.isEmpty() && List.of(schema.fieldNames()).contains(name)) {
                throw new IllegalArgumentException("the DataFrame already has a column " + name
                        + ": set predictionCol or probabilityCol to another name");
            }
        }
        StructType out = schema.add(prediction, DataTypes.DoubleType, false);
        return probability.isEmpty() ? out : out.add(probability, SQLDataTypes.VectorType(), false);
    }

    @Override
    public Dataset<Row> transform(Dataset<?> dataset) {
        StructType schema = dataset.schema();
        StructType out = transformSchema(schema);
        // Features that are a vector already are read where they are: a copy would be one more
        // vector to decode in every row.
        String[] scalars = getFeatureCols();
        boolean asIs = (scalars == null || scalars.length == 0)
                && schema.apply(getFeaturesCol()).dataType().equals(SQLDataTypes.VectorType());
        Dataset<Row> withVector = asIs
                ? dataset.toDF()
                : dataset.toDF()
                        .withColumn(FeatureColumns.VECTOR, FeatureColumns.vector(schema, getFeaturesCol(), scalars));
        Broadcast<byte[]> shared = JavaSparkContext.fromSparkContext(
                        dataset.sparkSession().sparkContext())
                .broadcast(fitted.weights());
        Predictor predictor = new Predictor(
                uid + "@" + Arrays.hashCode(fitted.weights()),
                fitted.spec(),
                shared,
                schema.length(),
                asIs ? schema.fieldIndex(getFeaturesCol()) : schema.length(),
                !getProbabilityCol().isEmpty());
        return withVector.mapPartitions(predictor, Encoders.row(out));
    }

    @Override
    public CohortModel copy(ParamMap extra) {
        CohortModel copy = new CohortModel(uid, fitted);
        return copyValues(copy, extra).setParent(parent());
    }

    @Override
    public MLWriter write() {
        return new Writer(this);
    }

    @Override
    public void save(String path) throws IOException {
        write().save(path);
    }

    /** Reads a model {@code write().save(path)} saved. */
    public static MLReader<CohortModel> read() {
        return new Reader();
    }

    /** The model saved at {@code path}. */
    public static CohortModel load(String path) {
        return read().load(path);
    }

    /**
     * Spark's metadata (parameters) in {@code path/metadata}, then {@code path/model.json} and the
     * weights: {@code path/weights.pt} (torch) or {@code path/weights.params} (djl).
     */
    private static final class Writer extends MLWriter {
        private final CohortModel model;

        Writer(CohortModel model) {
            this.model = model;
        }

        @Override
        public void saveImpl(String path) {
            // The SparkContext forms: the ones Spark 3.5 and 4.x both have.
            DefaultParamsWriter$.MODULE$.saveMetadata(
                    model, path, sparkSession().sparkContext(), Option.empty(), Option.empty());
            Map<String, Object> about = new LinkedHashMap<>();
            about.put("framework", model.fitted.spec().framework().paramValue());
            about.put("factory", model.fitted.spec().factory());
            about.put("width", model.fitted.spec().width());
            about.put("classes", model.fitted.spec().classes());
            about.put("streamSeconds", model.fitted.streamSeconds());
            about.put("history", model.fitted.history());
            try {
                write(new Path(path, "model.json"), JSON.writeValueAsBytes(about));
                write(new Path(path, weightsFile(model.fitted.spec().framework())), model.fitted.weights());
            } catch (IOException e) {
                throw new UncheckedIOException("cannot save the model to " + path + ": " + e.getMessage(), e);
            }
        }

        private void write(Path file, byte[] bytes) throws IOException {
            FileSystem fs = file.getFileSystem(sc().hadoopConfiguration());
            try (OutputStream out = fs.create(file, true)) {
                out.write(bytes);
            }
        }
    }

    private static String weightsFile(Framework framework) {
        return framework == Framework.DJL ? "weights.params" : "weights.pt";
    }

    private static final class Reader extends MLReader<CohortModel> {
        @Override
        public CohortModel load(String path) {
            DefaultParamsReader.Metadata metadata = DefaultParamsReader$.MODULE$.loadMetadata(
                    path, sparkSession().sparkContext(), CohortModel.class.getName());
            try {
                Map<String, Object> about =
                        JSON.readValue(read(new Path(path, "model.json")), new TypeReference<>() {});
                List<EpochStats> history = new ArrayList<>();
                for (Object epoch : (List<?>) about.get("history")) {
                    history.add(JSON.convertValue(epoch, EpochStats.class));
                }
                ModelSpec spec = new ModelSpec(
                        Framework.of((String) about.getOrDefault("framework", "torch")),
                        (String) about.get("factory"),
                        ((Number) about.get("width")).intValue(),
                        ((Number) about.get("classes")).intValue());
                FitResult fitted = new FitResult(
                        spec,
                        history,
                        read(new Path(path, weightsFile(spec.framework()))),
                        ((Number) about.get("streamSeconds")).doubleValue());
                CohortModel model = new CohortModel(metadata.uid(), fitted);
                metadata.getAndSetParams(model, scala.Option.empty());
                return model;
            } catch (IOException e) {
                throw new UncheckedIOException("cannot load a CohortModel from " + path + ": " + e.getMessage(), e);
            }
        }

        private byte[] read(Path file) throws IOException {
            FileSystem fs = file.getFileSystem(sc().hadoopConfiguration());
            try (InputStream in = fs.open(file)) {
                return in.readAllBytes();
            }
        }
    }
}
