package dev.cohort.api.checkpoint;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/**
 * A checkpoint written in the background: what the writer wrote when the call returned is what
 * the file holds, whatever the caller changes afterwards; a failure to put it in place is thrown
 * by the next wait; nothing half-written is left where the file goes.
 */
@Timeout(30)
class CheckpointFileTest {

    @TempDir
    Path dir;

    @Test
    void theFileHoldsTheSnapshotTakenWhenTheCallReturned() throws Exception {
        Path file = dir.resolve("checkpoint.bin");
        byte[] state = {1, 2, 3};
        CheckpointFile.writeAsync(file, tmp -> Files.write(tmp, state));
        state[0] = 42; // training goes on and changes its state
        CheckpointFile.awaitWrites();
        assertThat(Files.readAllBytes(file)).containsExactly(1, 2, 3);
        CheckpointFile.awaitWrites(); // nothing in flight: returns at once
        try (var files = Files.list(dir)) {
            assertThat(files.map(p -> p.getFileName().toString())).containsExactly("checkpoint.bin");
        }
    }

    @Test
    void theNextWriteWaitsForTheOneInFlight() throws Exception {
        Path first = dir.resolve("first.bin");
        Path second = dir.resolve("second.bin");
        CheckpointFile.writeAsync(first, tmp -> Files.write(tmp, new byte[1 << 20]));
        CheckpointFile.writeAsync(second, tmp -> {
            // The first is durable before the second is staged.
            assertThat(first).hasSize(1 << 20);
            Files.write(tmp, new byte[] {7});
        });
        CheckpointFile.awaitWrites();
        assertThat(Files.readAllBytes(second)).containsExactly(7);
    }

    @Test
    void aFailureInTheBackgroundIsThrownByTheNextWait() throws Exception {
        Path notAFolder = Files.writeString(dir.resolve("plain-file"), "x");
        Path file = notAFolder.resolve("checkpoint.bin"); // its parent is a file: it cannot be made
        CheckpointFile.writeAsync(file, tmp -> Files.write(tmp, new byte[] {1}));
        assertThatThrownBy(CheckpointFile::awaitWrites)
                .isInstanceOf(UncheckedIOException.class)
                .hasMessageStartingWith("saving checkpoint " + file + " failed");
        CheckpointFile.awaitWrites(); // thrown once
    }

    @Test
    void aWriterThatFailsFailsTheCallAndStagesNothing() {
        Path file = dir.resolve("never.bin");
        assertThatThrownBy(() -> CheckpointFile.writeAsync(file, tmp -> {
                    throw new java.io.IOException("disk full");
                }))
                .isInstanceOf(UncheckedIOException.class)
                .hasMessage("saving checkpoint " + file + " failed: disk full");
        assertThat(file).doesNotExist();
    }
}
