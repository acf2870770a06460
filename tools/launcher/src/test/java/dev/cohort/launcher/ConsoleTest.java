package dev.cohort.launcher;

import static org.assertj.core.api.Assertions.assertThat;

import dev.cohort.api.ProgressReporter.Finished;
import dev.cohort.api.ProgressReporter.Update;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/** How the console shows progress: plain lines for logs and pipes, a live line on a terminal. */
@Timeout(value = 20, unit = TimeUnit.SECONDS)
class ConsoleTest {

    /** What is written, and a wait for a text that progressbar's thread writes. */
    private static final class Written extends ByteArrayOutputStream {
        @Override
        public synchronized void write(byte[] b, int off, int len) {
            super.write(b, off, len);
            notifyAll();
        }

        @Override
        public synchronized void write(int b) {
            super.write(b);
            notifyAll();
        }

        synchronized String text() {
            return toString(StandardCharsets.UTF_8);
        }

        synchronized void await(String text) throws InterruptedException {
            long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(5);
            while (!text().contains(text)) {
                long left = deadline - System.nanoTime();
                assertThat(left).as("waiting for '" + text + "' in:\n" + text()).isPositive();
                TimeUnit.NANOSECONDS.timedWait(this, left);
            }
        }
    }

    private final Written out = new Written();
    private final ByteArrayOutputStream err = new ByteArrayOutputStream();
    /** The console's clock, in nanoseconds: the tests step it. */
    private final AtomicLong now = new AtomicLong();

    private Console console(boolean terminal, long plainIntervalMillis) {
        return new Console(
                new PrintStream(out, true, StandardCharsets.UTF_8),
                new PrintStream(err, true, StandardCharsets.UTF_8),
                terminal,
                plainIntervalMillis,
                () -> 100,
                now::get);
    }

    private String out() {
        return out.text();
    }

    private static Update step(long current) {
        return new Update("epoch 1/2", current, 10, "steps", "loss 0." + current);
    }

    @Test
    void plainProgressIsALineAtMostEveryInterval() throws InterruptedException {
        Console console = console(false, 300);
        console.progress(0, step(1));
        console.progress(0, step(2));
        console.workerLine(0, false, "an ordinary line");
        console.progress(1, step(3)); // another rank's: never shown
        now.addAndGet(TimeUnit.MILLISECONDS.toNanos(300));
        console.progress(0, step(4));
        console.progress(0, new Finished());

        assertThat(out().lines())
                .containsExactly(
                        "[rank 0] epoch 1/2: 1/10 steps (10%), loss 0.1",
                        "[rank 0] an ordinary line", "[rank 0] epoch 1/2: 4/10 steps (40%), loss 0.4");
        assertThat(err.size()).isZero();
    }

    @Test
    void onATerminalProgressIsOneLiveLineBelowTheOtherLines() throws InterruptedException {
        Console console = console(true, 300);
        console.progress(0, step(3));
        awaitOutput("epoch 1/2");
        console.workerLine(1, false, "a line from rank 1");
        console.message("a message");
        console.progress(0, step(7));
        awaitOutput("loss 0.7"); // the bar redraws itself every 200 ms
        console.progress(0, new Finished());

        String text = out();
        // Drawn in place: carriage returns and erasing, never a line break inside the bar.
        assertThat(text)
                .contains("\r\u001b[K" + "epoch 1/2")
                .contains("loss 0.3")
                .contains("loss 0.7")
                .contains("3/10 steps")
                .contains("7/10 steps");
        // The worker's line is written whole on an erased line, then the bar is drawn again.
        int line = text.indexOf("\r\u001b[K[rank 1] a line from rank 1\n");
        assertThat(line).isPositive();
        assertThat(text.substring(line + 1)).contains("\r\u001b[Kepoch 1/2");
        // The finished task's line is erased: the output ends with the cursor on an empty line.
        assertThat(text).endsWith("\r\u001b[K");
        assertThat(err.toString(StandardCharsets.UTF_8)).isEqualTo("cohort: a message\n");
        // No line longer than the terminal (100 columns, one kept free).
        for (String drawn : text.split("\r\u001b\\[K|\n")) {
            assertThat(drawn.replace("\n", "").length()).as(drawn).isLessThanOrEqualTo(99);
        }
    }

    @Test
    void aNewTaskReplacesTheBar() throws InterruptedException {
        Console console = console(true, 300);
        console.progress(0, step(10));
        awaitOutput("10/10 steps");
        console.progress(0, new Update("epoch 2/2", 1, 10, "steps", ""));
        awaitOutput("epoch 2/2");
        console.progress(0, new Finished());
        String text = out();
        assertThat(text.indexOf("epoch 2/2")).isGreaterThan(text.lastIndexOf("epoch 1/2"));
        assertThat(text).endsWith("\r\u001b[K");
    }

    private void awaitOutput(String text) throws InterruptedException {
        out.await(text);
    }
}
