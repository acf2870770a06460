package dev.cohort.examples;

import dev.cohort.api.Backends;
import dev.cohort.api.DistributedBackend;
import dev.cohort.api.collective.DenseBuffer;
import dev.cohort.api.collective.ReduceOp;
import dev.cohort.runtime.elastic.ElasticJob;
import java.time.Duration;

/**
 * A worker of an elastic run: {@code steps} checked allreduces; worker {@code dying} (its global
 * rank in generation 0) halts as if killed before step {@code dieAt}; {@code launcher-of-R}: worker
 * R SIGKILLs its node's launcher there instead (the node is lost: its guard kills its workers).
 * With a fifth argument {@code growTo}, the members admit waiting workers every 10 steps (20 ms
 * a step) and run until the world has been {@code growTo} for 20 steps; a joiner takes the root's
 * step first. A failed step re-forms the
 * group, takes rank 0's step, and goes on. Prints its pid at the start and the end, so the test
 * can tell that no survivor was restarted.
 */
public final class ElasticWorker {

    private ElasticWorker() {}

    public static void main(String[] args) throws InterruptedException {
        String engine = args[0];
        int steps = Integer.parseInt(args[1]);
        int dieAt = Integer.parseInt(args[2]);
        String dying = args[3];
        int growTo = args.length > 4 ? Integer.parseInt(args[4]) : 0;
        String me = System.getenv("RANK");
        long pid = ProcessHandle.current().pid();
        // What a re-form leaves for the tools: a JFR event (as under cohort run --trace) and a word to the observers.
        jdk.jfr.Recording reforms = new jdk.jfr.Recording();
        reforms.enable(dev.cohort.runtime.flight.ReformEvent.NAME);
        reforms.start();
        java.util.List<Integer> heard = new java.util.concurrent.CopyOnWriteArrayList<>();
        dev.cohort.api.steps.TrainingSteps.observe(new dev.cohort.api.steps.TrainingSteps.Observer() {
            @Override
            public void stepEnded(dev.cohort.api.steps.TrainingSteps.Step step) {}

            @Override
            public void reformed(int generation) {
                heard.add(generation);
            }
        });
        try (ElasticJob job = ElasticJob.of(Backends.select(engine), Duration.ofSeconds(60))) {
            System.out.println("START worker " + me + " pid " + pid + " elastic " + job.isElastic());
            System.out.println("GROUPS worker " + me + " of " + System.getenv("GROUP_WORLD_SIZE"));
            long step = 0;
            long grownAt = -1;
            if (job.joined()) {
                long[] root = {0};
                job.backend().group().broadcast(DenseBuffer.of(root), 0).await();
                step = root[0];
                grownAt = step;
                System.out.println("JOINED worker " + me + " generation " + job.generation() + " rank "
                        + job.backend().rank() + " of " + job.backend().worldSize() + " at root's step " + step);
            }
            while (growTo > 0 ? job.backend().worldSize() != growTo || step < grownAt + 20 : step < steps) {
                if (growTo > 0 && step > 3000) {
                    throw new AssertionError("the world did not grow to " + growTo + " within 3000 steps");
                }
                if (step == dieAt && dying.equals("launcher-of-" + me) && job.generation() == 0) {
                    System.out.println("KILLING the launcher of worker " + me);
                    System.out.flush();
                    ProcessHandle.current().parent().ifPresent(ProcessHandle::destroyForcibly);
                    Runtime.getRuntime().halt(137);
                }
                if (step == dieAt && me.equals(dying) && job.generation() == 0) {
                    System.out.println("DYING worker " + me);
                    System.out.flush();
                    Runtime.getRuntime().halt(137);
                }
                DistributedBackend b = job.backend();
                try {
                    double[] x = {step, 1};
                    b.group().allreduce(DenseBuffer.of(x), ReduceOp.SUM).await();
                    if (x[0] != step * b.worldSize() || x[1] != b.worldSize()) {
                        throw new AssertionError("step " + step + " on " + b.worldSize() + " ranks: allreduce gave "
                                + x[0] + ", " + x[1]);
                    }
                    step++;
                    if (growTo > 0) {
                        Thread.sleep(20);
                        if (step % 10 == 0 && job.admitWaitingWorkers(() -> {})) {
                            long[] root = {step};
                            job.backend()
                                    .group()
                                    .broadcast(DenseBuffer.of(root), 0)
                                    .await();
                            grownAt = step;
                            System.out.println("GREW worker " + me + " generation " + job.generation() + " world "
                                    + job.backend().worldSize() + " at step " + step);
                        }
                    }
                } catch (RuntimeException e) {
                    DistributedBackend now = job.reform(e);
                    long[] root = {step};
                    now.group().broadcast(DenseBuffer.of(root), 0).await();
                    System.out.println("REFORMED worker " + me + " generation " + job.generation() + " rank "
                            + now.rank() + " of " + now.worldSize() + " at step " + step + ", root's " + root[0]);
                    System.out.println(
                            "REFORM RECORDED worker " + me + ": " + recorded(reforms) + "; observers heard " + heard);
                    step = root[0];
                }
            }
            System.out.println("DONE worker " + me + " pid " + pid + " generation " + job.generation() + " world "
                    + job.backend().worldSize() + " steps " + step);
        }
        System.exit(0);
    }

    /** The re-form events {@code recording} holds so far: "generation 0 to 1 (why)", ... */
    private static String recorded(jdk.jfr.Recording recording) {
        try {
            java.nio.file.Path file = java.nio.file.Files.createTempFile("reforms", ".jfr");
            try {
                recording.dump(file);
                return jdk.jfr.consumer.RecordingFile.readAllEvents(file).stream()
                        .filter(e -> e.getEventType().getName().equals(dev.cohort.runtime.flight.ReformEvent.NAME))
                        .map(e -> "generation " + e.getInt("from") + " to " + e.getInt("to"))
                        .toList()
                        .toString();
            } finally {
                java.nio.file.Files.deleteIfExists(file);
            }
        } catch (java.io.IOException e) {
            return "unreadable: " + e;
        }
    }
}
