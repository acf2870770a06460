package dev.cohort.dist;

import dev.cohort.examples.ChartFiles;
import java.io.IOException;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import org.jfree.chart.ChartFactory;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.plot.PlotOrientation;
import org.jfree.data.category.DefaultCategoryDataset;

/**
 * The picture of a traced run ({@code cohort trace}): one bar a rank, its average step split into
 * the time it waited for its batch, computed forward and backward, waited while gradients were
 * averaged and stepped the optimizer, in milliseconds. The rank with the longest "computing" is the one the others wait for.
 */
final class StepChart {

    static {
        // Drawn into an image, never on a screen: no display needed.
        System.setProperty("java.awt.headless", "true");
    }

    private StepChart() {}

    /** {@code parts}: by rank, the milliseconds of each part in its average step, in drawing order. */
    static void write(Map<Integer, Map<String, Double>> parts, Path png) throws IOException {
        DefaultCategoryDataset data = new DefaultCategoryDataset();
        parts.forEach((rank, byPart) -> byPart.forEach((part, ms) -> data.addValue(ms, part, "rank " + rank)));
        JFreeChart chart = ChartFactory.createStackedBarChart(
                "Average step by rank", null, "milliseconds", data, PlotOrientation.HORIZONTAL, true, false, false);
        ChartFiles.writePng(chart, png, 900, 120 + 60 * Math.max(1, parts.size()));
    }

    /** The parts of a rank's average step, in drawing order, from its totals (GC pauses fall within them). */
    static Map<String, Double> parts(TraceCommand.Totals t) {
        Map<String, Double> parts = new LinkedHashMap<>();
        double msPerStep = 1000.0 / Math.max(1, t.steps) / 1e9;
        parts.put("data wait", t.dataWait.toNanos() * msPerStep);
        parts.put("forward", t.forward.toNanos() * msPerStep);
        parts.put("backward", t.backward.toNanos() * msPerStep);
        parts.put("averaging gradients", t.averaging.toNanos() * msPerStep);
        parts.put("optimizer step", t.optimizer.toNanos() * msPerStep);
        return parts;
    }
}
