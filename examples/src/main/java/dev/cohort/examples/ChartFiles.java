package dev.cohort.examples;

import java.awt.Color;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import org.jfree.chart.ChartUtils;
import org.jfree.chart.JFreeChart;

/** How Cohort's charts (the trainer's, the benchmarks') are written: one PNG on white, whole or not at all. */
public final class ChartFiles {

    private ChartFiles() {}

    /**
     * Writes {@code chart} on a white background as a {@code width} x {@code height} PNG to
     * {@code png}, creating its directory, through a temporary file and an atomic rename, so a
     * reader never sees half a chart.
     */
    public static void writePng(JFreeChart chart, Path png, int width, int height) throws IOException {
        chart.setBackgroundPaint(Color.WHITE);
        Path abs = png.toAbsolutePath();
        Files.createDirectories(abs.getParent());
        Path tmp = abs.resolveSibling(abs.getFileName() + ".tmp");
        ChartUtils.saveChartAsPNG(tmp.toFile(), chart, width, height);
        Files.move(tmp, abs, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }
}
