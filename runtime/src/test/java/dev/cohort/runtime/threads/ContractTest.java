package dev.cohort.runtime.threads;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import dev.cohort.api.DistributeRequest;
import dev.cohort.api.Distributed;
import dev.cohort.api.Topology;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

@Timeout(value = 30, unit = TimeUnit.SECONDS)
class ContractTest {

    @Test
    void everyCallBeforeInitializeNamesTheBackendAndSaysWhatToDo() {
        ThreadsBackend backend = new ThreadsBackend();
        for (Runnable call : List.<Runnable>of(
                backend::worldSize,
                backend::rank,
                backend::localRank,
                backend::localWorldSize,
                backend::nodeRank,
                backend::isRootWorker,
                backend::isLocalRootWorker,
                backend::barrier,
                backend::localBarrier,
                () -> backend.checkBatchSize(4),
                () -> backend.averageAll(1.0),
                () -> backend.distribute(DistributeRequest.of(null, null, null, null)))) {
            assertThatThrownBy(call::run)
                    .isInstanceOf(IllegalStateException.class)
                    .hasMessageContaining("threads backend has not been initialized")
                    .hasMessageContaining("call initialize()");
        }
    }

    @Test
    void initializeIsIdempotentAndCloseIsFinal() {
        ThreadsBackend backend = new ThreadsBackend();
        backend.initialize();
        backend.initialize();
        assertThat(backend.worldSize()).isEqualTo(1);
        assertThat(backend.isRootWorker()).isTrue();
        backend.close();
        backend.close();
        assertThatThrownBy(backend::rank)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
        assertThatThrownBy(backend::initialize)
                .isInstanceOf(IllegalStateException.class)
                .hasMessageContaining("closed");
    }

    @Test
    void nonDistributedBackendIsOneWorkerThatReturnsItsInputs() {
        try (NonDistributedBackend backend = new NonDistributedBackend()) {
            backend.initialize();
            assertThat(backend.topology()).isEqualTo(Topology.single());
            backend.barrier();
            backend.localBarrier();
            Object model = new Object();
            Object data = List.of(1, 2);
            Distributed<Object, String, Object, Integer> d =
                    backend.distribute(DistributeRequest.of(model, "sgd", data, 7));
            assertThat(d.model()).isSameAs(model);
            assertThat(d.optimizer()).isEqualTo("sgd");
            assertThat(d.trainingData()).isSameAs(data);
            assertThat(d.lrScheduler()).isEqualTo(7);
            assertThat(backend.averageAll(2.5)).isEqualTo(2.5);
            float[] values = {1, 2};
            assertThat(backend.averageAll(values)).containsExactly(1, 2).isNotSameAs(values);
        }
    }

    @Test
    void ranksAndNodesFollowTheLayout() {
        ThreadsWorld world = new ThreadsWorld(5, 2, Duration.ofSeconds(10));
        List<Topology> topologies = world.runAll(
                rank -> {
                    try (ThreadsBackend backend = new ThreadsBackend()) {
                        backend.initialize();
                        assertThat(backend.isLocalRootWorker()).isEqualTo(rank % 2 == 0);
                        assertThat(backend.isRootWorker()).isEqualTo(rank == 0);
                        backend.barrier();
                        return backend.topology();
                    }
                },
                Duration.ofSeconds(20));
        assertThat(topologies)
                .containsExactly(
                        new Topology(0, 5, 0, 2, 0),
                        new Topology(1, 5, 1, 2, 0),
                        new Topology(2, 5, 0, 2, 1),
                        new Topology(3, 5, 1, 2, 1),
                        new Topology(4, 5, 0, 1, 2));
    }

    @Test
    void localBarrierWaitsForThisNodeOnly() {
        ThreadsWorld world = new ThreadsWorld(4, 2, Duration.ofSeconds(10));
        CountDownLatch node0Passed = new CountDownLatch(2);
        world.runAll(
                rank -> {
                    try (ThreadsBackend backend = new ThreadsBackend()) {
                        backend.initialize();
                        if (backend.nodeRank() == 0) {
                            backend.localBarrier(); // node 1 is not there: must not matter
                            node0Passed.countDown();
                        } else {
                            assertThat(node0Passed.await(5, TimeUnit.SECONDS))
                                    .as("node 0 passed its local barrier")
                                    .isTrue();
                            backend.localBarrier();
                        }
                        backend.barrier();
                        return null;
                    }
                },
                Duration.ofSeconds(20));
    }

    @Test
    void averageAllIsTheMeanAndLeavesInputsAlone() {
        List<double[]> results = ThreadsWorld.run(3, rank -> {
            try (ThreadsBackend backend = new ThreadsBackend()) {
                backend.initialize();
                double[] input = {rank, 10.0 * rank};
                double[] mean = backend.averageAll(input);
                assertThat(input).containsExactly(rank, 10.0 * rank);
                DenseBuffer direct = DenseBuffer.allocateDirect(DataType.FLOAT32, 1);
                direct.setDouble(0, rank);
                DenseBuffer avg = backend.averageAll(direct);
                assertThat(avg.isDirect()).isTrue();
                assertThat(direct.getDouble(0)).isEqualTo(rank);
                assertThat(avg.getDouble(0)).isEqualTo(1.0);
                assertThat(backend.averageAll((double) rank)).isEqualTo(1.0);
                return mean;
            }
        });
        assertThat(results).allSatisfy(m -> assertThat(m).containsExactly(1.0, 10.0));
    }

    @Test
    void batchSizeMustCoverTheWorld() {
        ThreadsWorld.run(3, rank -> {
            try (ThreadsBackend backend = new ThreadsBackend()) {
                backend.initialize();
                backend.checkBatchSize(3);
                assertThatThrownBy(() -> backend.checkBatchSize(2))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("(2 < 3)");
                return null;
            }
        });
    }

    @Test
    void distributingAnUnsupportedModelOnSeveralWorkersSaysWhichModuleToAdd() {
        ThreadsWorld.run(2, rank -> {
            try (ThreadsBackend backend = new ThreadsBackend()) {
                backend.initialize();
                assertThatThrownBy(
                                () -> backend.distribute(DistributeRequest.of(new StringBuilder(), null, null, null)))
                        .isInstanceOf(IllegalArgumentException.class)
                        .hasMessageContaining("java.lang.StringBuilder")
                        .hasMessageContaining("cohort-torch");
                assertThat(backend.distribute(DistributeRequest.of(null, "opt", null, null))
                                .optimizer())
                        .isEqualTo("opt");
                return null;
            }
        });
    }
}
