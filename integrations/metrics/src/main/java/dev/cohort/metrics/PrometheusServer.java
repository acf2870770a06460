package dev.cohort.metrics;

import com.sun.net.httpserver.HttpServer;
import dev.cohort.api.Topology;
import dev.cohort.runtime.AbstractProcessGroup;
import io.micrometer.core.instrument.binder.jvm.JvmGcMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmMemoryMetrics;
import io.micrometer.core.instrument.binder.jvm.JvmThreadMetrics;
import io.micrometer.core.instrument.binder.system.ProcessorMetrics;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetSocketAddress;
import java.nio.charset.StandardCharsets;

/** Rank 0's Prometheus registry and the HTTP server that serves it ({@link PrometheusEndpoint}). */
final class PrometheusServer {

    private static final System.Logger LOG = System.getLogger(PrometheusServer.class.getName());

    private PrometheusServer() {}

    /** Serves {@code world}'s meters and the JVM's on {@code port}; returns what stops it. */
    static AutoCloseable start(int port, AbstractProcessGroup world, Topology topology, int restarts) {
        var recorder = world.flightRecorder()
                .orElseThrow(() -> new IllegalArgumentException(
                        PrometheusEndpoint.ENV_PORT + " asks rank 0 for metrics, which read its "
                                + "flight record: unset COHORT_FLIGHT_RECORDS=0"));
        PrometheusMeterRegistry registry = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
        new CollectiveMeters(recorder, topology.rank()).bindTo(registry);
        StepMeters steps = new StepMeters(topology.rank(), restarts);
        steps.bindTo(registry);
        new JvmMemoryMetrics().bindTo(registry);
        JvmGcMetrics gc = new JvmGcMetrics();
        gc.bindTo(registry);
        new JvmThreadMetrics().bindTo(registry);
        new ProcessorMetrics().bindTo(registry);
        HttpServer server;
        try {
            server = HttpServer.create(new InetSocketAddress(port), 0);
        } catch (IOException e) {
            closeQuietly(steps);
            gc.close();
            registry.close();
            throw new IllegalArgumentException(
                    PrometheusEndpoint.ENV_PORT + "=" + port + ": rank 0 cannot serve its metrics there ("
                            + e.getMessage() + "); the port may be taken: pick another",
                    e);
        }
        server.createContext("/metrics", exchange -> {
            byte[] body = registry.scrape().getBytes(StandardCharsets.UTF_8);
            exchange.getResponseHeaders().add("Content-Type", "text/plain; version=0.0.4; charset=utf-8");
            exchange.sendResponseHeaders(200, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        startAsDaemon(server);
        LOG.log(
                System.Logger.Level.INFO,
                "rank 0 serves its metrics as Prometheus text at http://" + hostName() + ":" + port + "/metrics");
        return () -> {
            server.stop(0);
            steps.close();
            gc.close();
            registry.close();
        };
    }

    private static void closeQuietly(AutoCloseable c) {
        try {
            c.close();
        } catch (Exception e) {
            // only the failure at hand is worth saying
        }
    }

    /** Starts the server from a daemon thread: its dispatcher thread, made there, is a daemon too. */
    private static void startAsDaemon(HttpServer server) {
        Thread starter = new Thread(server::start, "cohort-metrics-start");
        starter.setDaemon(true);
        starter.start();
        try {
            starter.join();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    private static String hostName() {
        try {
            return java.net.InetAddress.getLocalHost().getHostName();
        } catch (IOException e) {
            return "localhost";
        }
    }
}
