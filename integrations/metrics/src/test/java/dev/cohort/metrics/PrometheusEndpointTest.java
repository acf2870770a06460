package dev.cohort.metrics;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.runtime.FreePorts;
import dev.cohort.tcp.TcpBackend;
import dev.cohort.tcp.TcpOptions;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import java.net.URI;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.time.Duration;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Two ranks of the tcp engine, each in a thread: rank 0 serves Prometheus text on
 * {@code COHORT_METRICS_PORT}, scraped over HTTP while the ranks run, with the allreduces they made;
 * the meters bind to a program's own registry too; a bad port fails the backend's initialization.
 */
@Timeout(60)
class PrometheusEndpointTest {

    private static Map<String, String> env(int rank, int masterPort, String metricsPort) {
        Map<String, String> env = new HashMap<>(Map.of(
                "RANK",
                Integer.toString(rank),
                "WORLD_SIZE",
                "2",
                "LOCAL_RANK",
                Integer.toString(rank),
                "LOCAL_WORLD_SIZE",
                "2",
                "MASTER_ADDR",
                "127.0.0.1",
                "MASTER_PORT",
                Integer.toString(masterPort),
                "GROUP_RANK",
                "0"));
        if (metricsPort != null) {
            env.put(PrometheusEndpoint.ENV_PORT, metricsPort);
        }
        return env;
    }

    @Test
    void rankZeroServesItsCollectivesAsPrometheusText() throws Exception {
        int masterPort = FreePorts.pick(null);
        int metricsPort = FreePorts.pick(null);
        CyclicBarrier scraped = new CyclicBarrier(3);
        ExecutorService ranks = Executors.newFixedThreadPool(2);
        try {
            List<Future<String>> done = new ArrayList<>();
            for (int rank = 0; rank < 2; rank++) {
                Map<String, String> env = env(rank, masterPort, Integer.toString(metricsPort));
                done.add(ranks.submit(() -> {
                    try (TcpBackend backend = new TcpBackend(new TcpOptions(), env)) {
                        backend.initialize();
                        SimpleMeterRegistry own = new SimpleMeterRegistry();
                        CollectiveMeters.of(backend).bindTo(own);
                        for (int i = 0; i < 5; i++) {
                            backend.group()
                                    .allreduce(DenseBuffer.of(new float[1024]), ReduceOp.SUM)
                                    .await();
                        }
                        backend.group().barrier().await();
                        scraped.await(30, TimeUnit.SECONDS); // the test scrapes now
                        scraped.await(30, TimeUnit.SECONDS);
                        return own.get("cohort.collective.calls")
                                        .tag("kind", "allreduce")
                                        .functionCounter()
                                        .count() + " "
                                + own.get("cohort.collective.bytes")
                                        .tag("kind", "allreduce")
                                        .functionCounter()
                                        .count();
                    }
                }));
            }
            scraped.await(30, TimeUnit.SECONDS);
            String text = scrape(metricsPort);
            scraped.await(30, TimeUnit.SECONDS);
            assertThat(text)
                    .contains("cohort_collective_calls_total{kind=\"allreduce\",rank=\"0\"} 5.0")
                    .contains("cohort_collective_bytes_total{kind=\"allreduce\",rank=\"0\"} 20480.0")
                    .contains("cohort_collective_calls_total{kind=\"barrier\",rank=\"0\"} 1.0")
                    .containsPattern("cohort_collective_time_seconds_count\\{kind=\"allreduce\",rank=\"0\"} 5\n")
                    .contains("jvm_memory_used_bytes");
            assertThat(done.get(0).get(30, TimeUnit.SECONDS)).isEqualTo("5.0 20480.0");
            assertThat(done.get(1).get(30, TimeUnit.SECONDS)).isEqualTo("5.0 20480.0");
        } finally {
            ranks.shutdownNow();
        }
        // Closed with the backend: the port is free again.
        try (java.net.ServerSocket again = new java.net.ServerSocket(metricsPort)) {
            assertThat(again.getLocalPort()).isEqualTo(metricsPort);
        }
    }

    @Test
    void aBadPortFailsTheBackendsInitialization() {
        // A world of one joins at once.
        Map<String, String> alone = env(0, FreePorts.pick(null), "http");
        alone.put("WORLD_SIZE", "1");
        alone.put("LOCAL_WORLD_SIZE", "1");
        try (TcpBackend one = new TcpBackend(new TcpOptions(), alone)) {
            assertThatThrownBy(one::initialize)
                    .isInstanceOf(IllegalArgumentException.class)
                    .hasMessage("COHORT_METRICS_PORT must be a port from 1 to 65535, got 'http'");
        }
    }

    private static String scrape(int port) throws Exception {
        HttpClient http =
                HttpClient.newBuilder().connectTimeout(Duration.ofSeconds(10)).build();
        HttpResponse<String> response = http.send(
                HttpRequest.newBuilder(URI.create("http://127.0.0.1:" + port + "/metrics"))
                        .timeout(Duration.ofSeconds(10))
                        .build(),
                HttpResponse.BodyHandlers.ofString());
        assertThat(response.statusCode()).isEqualTo(200);
        assertThat(response.headers().firstValue("Content-Type"))
                .hasValueSatisfying(t -> assertThat(t).startsWith("text/plain"));
        return response.body();
    }
}
