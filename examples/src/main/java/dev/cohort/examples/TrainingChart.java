package dev.cohort.examples;

import dev.cohort.metrics.MetricsFile;
import java.awt.BasicStroke;
import java.awt.Color;
import java.io.IOException;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.function.ToDoubleFunction;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;

/**
 * The training curve of a {@link TrainingSummary} as a PNG (JFreeChart): three panels over one
 * epoch axis — the mean training loss of each epoch, the test accuracy after it, and its
 * throughput in samples/s over all workers — and, with {@code cohort run --metrics-file}, a fourth
 * of the parts of rank 0's steps. A point sits at the epochs trained when the epoch
 * ended, so an epoch cut short by {@code --max-steps} stands at a fraction.
 */
final class TrainingChart {

    static final int WIDTH = 900;
    static final int HEIGHT = 900;

    static {
        // Drawn into an image, never on a screen: no display needed (workers have none).
        System.setProperty("java.awt.headless", "true");
    }

    private TrainingChart() {}

    /** Where the chart of the summary at {@code json} goes: {@code DIR/NAME.json} gives {@code DIR/NAME.png}. */
    static Path pathFor(Path json) {
        String name = json.getFileName().toString();
        String stem = name.toLowerCase(Locale.ROOT).endsWith(".json") ? name.substring(0, name.length() - 5) : name;
        return json.resolveSibling(stem + ".png");
    }

    /** Writes the chart of {@code summary} to {@code png} (through a temporary file and a rename). */
    static void write(TrainingSummary summary, Path png) throws IOException {
        write(summary, List.of(), png);
    }

    /**
     * As {@link #write(TrainingSummary, Path)}, with a fourth panel when {@code steps} (rank 0's lines
     * of {@code --metrics-file}) has any: the time of each part of a step, in means over runs of
     * steps, on the same epoch axis.
     */
    static void write(TrainingSummary summary, List<MetricsFile.Line> steps, Path png) throws IOException {
        XYSeries loss = new XYSeries("training loss");
        XYSeries accuracy = new XYSeries("test accuracy");
        XYSeries throughput = new XYSeries("samples/s");
        boolean wholeEpochs = true;
        for (TrainingSummary.EpochResult e : summary.epochDetails()) {
            loss.add(e.epochsDone(), finiteOrNull(e.trainLoss()));
            accuracy.add(e.epochsDone(), finiteOrNull(e.testAccuracy()));
            throughput.add(e.epochsDone(), finiteOrNull(e.samplesPerSecond()));
            wholeEpochs &= e.epochsDone() == Math.rint(e.epochsDone());
        }
        NumberAxis epochs = new NumberAxis("epoch");
        epochs.setAutoRangeIncludesZero(false);
        if (wholeEpochs) {
            epochs.setStandardTickUnits(NumberAxis.createIntegerTickUnits());
        }
        CombinedDomainXYPlot plot = new CombinedDomainXYPlot(epochs);
        plot.setGap(12);
        plot.add(panel(loss, "training loss (mean of the epoch)", new Color(0xC0392B), false), 1);
        plot.add(panel(accuracy, "test accuracy", new Color(0x1F77B4), false), 1);
        plot.add(panel(throughput, "samples/s (all workers)", new Color(0x2CA02C), true), 1);
        XYSeriesCollection parts = stepParts(summary, steps);
        if (parts.getSeriesCount() > 0) {
            NumberAxis ms = new NumberAxis("step parts, ms (rank 0)");
            XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, false);
            Color[] colors = {
                new Color(0xD62728),
                new Color(0x1F77B4),
                new Color(0x2CA02C),
                new Color(0x9467BD),
                new Color(0xFF7F0E),
                new Color(0x8C564B)
            };
            for (int i = 0; i < parts.getSeriesCount(); i++) {
                renderer.setSeriesPaint(i, colors[i % colors.length]); // no pale yellow on white
            }
            XYPlot stepPlot = new XYPlot(parts, null, ms, renderer);
            stepPlot.setBackgroundPaint(Color.WHITE);
            stepPlot.setDomainGridlinePaint(Color.LIGHT_GRAY);
            stepPlot.setRangeGridlinePaint(Color.LIGHT_GRAY);
            plot.add(stepPlot, 1);
        }

        JFreeChart chart = new JFreeChart(
                String.format(
                        Locale.ROOT,
                        "Fashion-MNIST %s: %d worker(s) on %s",
                        summary.model(),
                        summary.workers(),
                        summary.backend()),
                JFreeChart.DEFAULT_TITLE_FONT,
                plot,
                parts.getSeriesCount() > 0); // a legend for the step parts
        chart.addSubtitle(new TextTitle(String.format(
                Locale.ROOT,
                "test accuracy %.4f, %.0f samples/s, %d steps of %d examples, %.1f s",
                summary.testAccuracy(),
                summary.samplesPerSecond(),
                summary.steps(),
                summary.globalBatchSize(),
                summary.seconds())));
        ChartFiles.writePng(chart, png, WIDTH, steps.isEmpty() ? HEIGHT : HEIGHT * 4 / 3);
    }

    /** Steps averaged into at most this many points per part. */
    static final int STEP_POINTS = 100;

    /**
     * The parts of each step of {@code lines}, placed on the epoch axis: the steps of each epoch of
     * the summary spread evenly over it, the last line at the run's last step (lines beyond the
     * summary's steps, from earlier runs, left out); then means over runs of steps.
     */
    static XYSeriesCollection stepParts(TrainingSummary summary, List<MetricsFile.Line> lines) {
        List<Double> positions = new ArrayList<>();
        double previous = 0;
        for (TrainingSummary.EpochResult e : summary.epochDetails()) {
            double start = Math.max(e.epoch() - 1, previous); // epochs count from 1
            for (long k = 1; k <= e.steps(); k++) {
                positions.add(start + (e.epochsDone() - start) * k / e.steps());
            }
            previous = e.epochsDone();
        }
        int n = Math.min(lines.size(), positions.size());
        List<MetricsFile.Line> placed = lines.subList(lines.size() - n, lines.size());
        List<Double> at = positions.subList(positions.size() - n, positions.size());
        Map<String, ToDoubleFunction<MetricsFile.Line>> seconds = new LinkedHashMap<>();
        seconds.put("forward", MetricsFile.Line::forwardS);
        seconds.put("backward", MetricsFile.Line::backwardS);
        seconds.put("averaging gradients", MetricsFile.Line::averagingS);
        seconds.put("optimizer step", MetricsFile.Line::optimizerS);
        seconds.put("data wait", MetricsFile.Line::dataWaitS);
        XYSeriesCollection parts = new XYSeriesCollection();
        int per = Math.max(1, (n + STEP_POINTS - 1) / STEP_POINTS);
        seconds.forEach((part, time) -> {
            XYSeries series = new XYSeries(part);
            for (int from = 0; from < n; from += per) {
                int to = Math.min(n, from + per);
                series.add(
                        at.subList(from, to).stream()
                                .mapToDouble(Double::doubleValue)
                                .average()
                                .orElse(0),
                        1e3
                                * placed.subList(from, to).stream()
                                        .mapToDouble(time)
                                        .average()
                                        .orElse(0));
            }
            if (n > 0) {
                parts.addSeries(series);
            }
        });
        return parts;
    }

    private static XYPlot panel(XYSeries series, String label, Color color, boolean fromZero) {
        NumberAxis values = new NumberAxis(label);
        values.setAutoRangeIncludesZero(fromZero);
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        renderer.setSeriesPaint(0, color);
        renderer.setSeriesStroke(0, new BasicStroke(2f));
        XYPlot plot = new XYPlot(new XYSeriesCollection(series), null, values, renderer);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        return plot;
    }

    private static Double finiteOrNull(double x) {
        return Double.isFinite(x) ? x : null;
    }
}
