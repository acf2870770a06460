package dev.cohort.bench;

import dev.cohort.cli.Commands;
import dev.cohort.examples.ChartFiles;
import java.awt.BasicStroke;
import java.awt.Color;
import java.awt.Shape;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.text.DecimalFormat;
import java.text.FieldPosition;
import java.text.NumberFormat;
import java.text.ParsePosition;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.concurrent.Callable;
import java.util.stream.Collectors;
import org.jfree.chart.JFreeChart;
import org.jfree.chart.axis.LogAxis;
import org.jfree.chart.axis.NumberAxis;
import org.jfree.chart.axis.NumberTickUnit;
import org.jfree.chart.plot.CombinedDomainXYPlot;
import org.jfree.chart.plot.DefaultDrawingSupplier;
import org.jfree.chart.plot.XYPlot;
import org.jfree.chart.renderer.xy.XYLineAndShapeRenderer;
import org.jfree.chart.title.TextTitle;
import org.jfree.chart.ui.RectangleEdge;
import org.jfree.data.xy.XYSeries;
import org.jfree.data.xy.XYSeriesCollection;
import picocli.CommandLine.Command;
import picocli.CommandLine.Option;
import picocli.CommandLine.Parameters;

/**
 * {@code ./cohort bench chart}: the allreduce results of several files side by side, as a PNG
 * (JFreeChart) of two panels over one size axis (log scale, powers of 4 labelled): bus bandwidth
 * by size, and the median time by size (log scale). One series per file, labelled with the
 * file's engine (or name); Cohort's engines drawn solid, the peers dashed.
 */
@Command(
        name = "chart",
        mixinStandardHelpOptions = true,
        versionProvider = Commands.Version.class,
        description = "Draws collectives results (cohort bench collectives --json, torch_collectives.py, "
                + "mpi_allreduce.py's table) as a PNG: allreduce bus bandwidth and time by size, one series per file.")
final class BenchChart implements Callable<Integer> {

    static final int WIDTH = 1000;
    static final int HEIGHT = 900;
    static final String OP = "allreduce";
    /** Ten colours told apart easily (Tableau's). */
    private static final Color[] PALETTE = {
        new Color(0x1F77B4),
        new Color(0xFF7F0E),
        new Color(0x2CA02C),
        new Color(0xD62728),
        new Color(0x9467BD),
        new Color(0x8C564B),
        new Color(0xE377C2),
        new Color(0x7F7F7F),
        new Color(0xBCBD22),
        new Color(0x17BECF)
    };

    static {
        // Drawn into an image, never on a screen: no display needed.
        System.setProperty("java.awt.headless", "true");
    }

    @Option(names = "--out", paramLabel = "FILE.png", required = true, description = "Where the chart goes.")
    Path out;

    @Option(names = "--title", paramLabel = "TEXT", description = "The chart's title. Default: ${DEFAULT-VALUE}.")
    String title = "allreduce by size";

    @Option(
            names = "--median",
            description = "Files with the same label make one series: at each size, the median "
                    + "over them (a sitting's rounds).")
    boolean median;

    @Parameters(
            paramLabel = "[LABEL=]RESULT",
            arity = "1..*",
            description = "Result files; LABEL= names a file's "
                    + "series (default: the engine the file names, else the file's name).")
    List<String> files = new ArrayList<>();

    @Override
    public Integer call() throws IOException {
        List<Series> series = new ArrayList<>();
        for (String arg : files) {
            series.add(Series.of(arg));
        }
        write(median ? medians(series) : distinct(series), out, title);
        System.out.println("chart written to " + out.toAbsolutePath());
        return 0;
    }

    /**
     * One line of the chart: a label, and the allreduce rows of one file (or the medians of several).
     */
    record Series(String label, boolean cohort, int world, List<Results.Row> rows) {

        /** {@code [LABEL=]FILE}: the file's allreduce rows, under LABEL or the file's engine. */
        static Series of(String arg) throws IOException {
            String label = null;
            Path file = Path.of(arg);
            int eq = arg.indexOf('=');
            if (eq > 0 && !Files.exists(file)) {
                label = arg.substring(0, eq);
                file = Path.of(arg.substring(eq + 1));
            }
            if (!Files.isRegularFile(file)) {
                throw new IllegalArgumentException("no result file " + file);
            }
            Results.Result result = Results.read(file);
            List<Results.Row> rows = result.of(OP);
            if (rows.isEmpty()) {
                throw new IllegalArgumentException(file + ": no " + OP + " results to draw");
            }
            return new Series(label != null ? label : result.engine(), result.cohort(), result.world(), rows);
        }
    }

    /** Series with the same label made apart by a number, so that the legend tells them apart. */
    static List<Series> distinct(List<Series> series) {
        Map<String, Integer> seen = new LinkedHashMap<>();
        series.forEach(s -> seen.merge(s.label(), 1, Integer::sum));
        Map<String, Integer> numbered = new LinkedHashMap<>();
        List<Series> out = new ArrayList<>();
        for (Series s : series) {
            if (seen.get(s.label()) == 1) {
                out.add(s);
            } else {
                int n = numbered.merge(s.label(), 1, Integer::sum);
                out.add(new Series(s.label() + " #" + n, s.cohort(), s.world(), s.rows()));
            }
        }
        return out;
    }

    /** One series per label: at each size, the median time and bus bandwidth over that label's series. */
    static List<Series> medians(List<Series> series) {
        Map<String, List<Series>> byLabel =
                series.stream().collect(Collectors.groupingBy(Series::label, LinkedHashMap::new, Collectors.toList()));
        List<Series> out = new ArrayList<>();
        for (Map.Entry<String, List<Series>> e : byLabel.entrySet()) {
            Map<Long, List<Results.Row>> bySize = new TreeMap<>();
            e.getValue()
                    .forEach(s -> s.rows()
                            .forEach(r -> bySize.computeIfAbsent(r.bytes(), b -> new ArrayList<>())
                                    .add(r)));
            List<Results.Row> rows = new ArrayList<>();
            bySize.forEach((bytes, rs) -> rows.add(new Results.Row(
                    OP,
                    bytes,
                    median(rs.stream().mapToDouble(Results.Row::medianS).toArray()),
                    median(rs.stream().mapToDouble(Results.Row::busbwGbs).toArray()))));
            Series first = e.getValue().get(0);
            out.add(new Series(e.getKey(), first.cohort(), first.world(), rows));
        }
        return out;
    }

    static double median(double[] values) {
        double[] v = values.clone();
        Arrays.sort(v);
        int n = v.length;
        return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
    }

    /** The chart of a collectives result written to {@code json}: {@code X.json} gives {@code X.png}. */
    static Path pngFor(Path json) {
        return json.resolveSibling(Results.stem(json) + ".png");
    }

    /** Draws {@code series} to {@code png} (through a temporary file and a rename). */
    static void write(List<Series> series, Path png, String title) throws IOException {
        XYSeriesCollection bandwidth = new XYSeriesCollection();
        XYSeriesCollection times = new XYSeriesCollection();
        for (Series s : series) {
            XYSeries bw = new XYSeries(s.label(), true, true);
            XYSeries t = new XYSeries(s.label(), true, true);
            for (Results.Row r : s.rows()) {
                if (r.bytes() > 0) {
                    double x = Math.log(r.bytes()) / Math.log(2);
                    bw.addOrUpdate(x, r.busbwGbs());
                    if (r.medianS() > 0) {
                        t.addOrUpdate(x, r.medianS() * 1e6);
                    }
                }
            }
            bandwidth.addSeries(bw);
            times.addSeries(t);
        }

        NumberAxis sizes = new NumberAxis("size (bytes per rank, log scale)");
        sizes.setTickUnit(new NumberTickUnit(2, new SizeFormat())); // a tick at every power of 4
        sizes.setAutoRangeIncludesZero(false);
        NumberAxis bw = new NumberAxis("bus bandwidth (GB/s)");
        LogAxis time = new LogAxis("median time (µs, log scale)");
        time.setBase(10);
        time.setTickUnit(new NumberTickUnit(1)); // a tick at every power of 10
        time.setMinorTickCount(9);
        time.setMinorTickMarksVisible(true);
        time.setNumberFormatOverride(new DecimalFormat("#,##0.###"));
        time.setSmallestValue(0.01);

        CombinedDomainXYPlot plot = new CombinedDomainXYPlot(sizes);
        plot.setGap(14);
        XYPlot top = panel(bandwidth, bw, series);
        plot.add(top, 1);
        plot.add(panel(times, time, series), 1);
        plot.setFixedLegendItems(top.getLegendItems()); // each series once, not once per panel

        JFreeChart chart = new JFreeChart(title, JFreeChart.DEFAULT_TITLE_FONT, plot, true);
        chart.getLegend().setPosition(RectangleEdge.BOTTOM);
        chart.addSubtitle(new TextTitle(subtitle(series)));
        ChartFiles.writePng(chart, png, WIDTH, HEIGHT);
    }

    private static String subtitle(List<Series> series) {
        TreeSet<Integer> worlds =
                series.stream().map(Series::world).filter(w -> w > 0).collect(Collectors.toCollection(TreeSet::new));
        String ranks = worlds.isEmpty()
                ? ""
                : worlds.size() == 1
                        ? worlds.first() + " ranks; "
                        : "ranks " + worlds.stream().map(String::valueOf).collect(Collectors.joining(", ")) + "; ";
        return ranks + "median over iterations of the slowest rank; bus bandwidth as in nccl-tests; "
                + "Cohort solid, peers dashed";
    }

    /** A series looks the same in both panels: its colour, shape and line by its index. */
    private static XYPlot panel(XYSeriesCollection data, org.jfree.chart.axis.ValueAxis axis, List<Series> series) {
        XYLineAndShapeRenderer renderer = new XYLineAndShapeRenderer(true, true);
        BasicStroke solid = new BasicStroke(2f);
        BasicStroke dashed =
                new BasicStroke(2f, BasicStroke.CAP_BUTT, BasicStroke.JOIN_MITER, 10f, new float[] {7f, 5f}, 0f);
        Shape[] shapes = DefaultDrawingSupplier.createStandardSeriesShapes();
        for (int i = 0; i < series.size(); i++) {
            renderer.setSeriesPaint(i, PALETTE[i % PALETTE.length]);
            renderer.setSeriesShape(i, shapes[i % shapes.length]);
            renderer.setSeriesStroke(i, series.get(i).cohort() ? solid : dashed);
        }
        XYPlot plot = new XYPlot(data, null, axis, renderer);
        plot.setBackgroundPaint(Color.WHITE);
        plot.setDomainGridlinePaint(Color.LIGHT_GRAY);
        plot.setRangeGridlinePaint(Color.LIGHT_GRAY);
        return plot;
    }

    /** Labels the size axis, whose values are log2 of bytes: 12 is {@code 4 KiB}. */
    static final class SizeFormat extends NumberFormat {
        @Override
        public StringBuffer format(double log2Bytes, StringBuffer to, FieldPosition pos) {
            double bytes = Math.pow(2, log2Bytes);
            String[] units = {"B", "KiB", "MiB", "GiB"};
            int u = 0;
            while (bytes >= 1024 && u < units.length - 1) {
                bytes /= 1024;
                u++;
            }
            return to.append(
                    String.format(Locale.ROOT, bytes == Math.rint(bytes) ? "%.0f %s" : "%.1f %s", bytes, units[u]));
        }

        @Override
        public StringBuffer format(long log2Bytes, StringBuffer to, FieldPosition pos) {
            return format((double) log2Bytes, to, pos);
        }

        @Override
        public Number parse(String source, ParsePosition pos) {
            throw new UnsupportedOperationException("labels only");
        }
    }
}
