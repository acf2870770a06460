package dev.cohort.djl;

import static org.assertj.core.api.Assertions.assertThat;

import ai.djl.training.DefaultTrainingConfig;
import ai.djl.training.TrainingConfig;
import ai.djl.training.listener.EpochTrainingListener;
import ai.djl.training.listener.EvaluatorTrainingListener;
import ai.djl.training.listener.LoggingTrainingListener;
import ai.djl.training.listener.TimeMeasureTrainingListener;
import ai.djl.training.listener.TrainingListener;
import ai.djl.training.loss.Loss;
import org.junit.jupiter.api.Test;

/** Listeners that log or write files run on the root only; those training needs run everywhere. */
class QuietWorkersTest {

    @Test
    void workersKeepOnlyTheListenersTrainingNeeds() {
        TrainingConfig config = new DefaultTrainingConfig(Loss.softmaxCrossEntropyLoss())
                .addTrainingListeners(TrainingListener.Defaults.logging());
        assertThat(DistributedTrainer.quietOnWorkers(config, true)).isSameAs(config);
        TrainingConfig worker = DistributedTrainer.quietOnWorkers(config, false);
        assertThat(worker.getTrainingListeners())
                .hasAtLeastOneElementOfType(EpochTrainingListener.class)
                .hasAtLeastOneElementOfType(EvaluatorTrainingListener.class)
                .noneMatch(l -> l instanceof LoggingTrainingListener || l instanceof TimeMeasureTrainingListener);
        assertThat(worker.getLossFunction()).isSameAs(config.getLossFunction());
        assertThat(worker.getOptimizer()).isSameAs(config.getOptimizer());
        assertThat(worker.getEvaluators()).isEqualTo(config.getEvaluators());
    }
}
