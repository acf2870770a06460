package dev.cohort.examples;

import com.fasterxml.jackson.core.JacksonException;
import com.fasterxml.jackson.core.json.JsonReadFeature;
import com.fasterxml.jackson.core.type.TypeReference;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.json.JsonMapper;
import java.io.IOException;
import java.io.PrintStream;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.util.List;

/**
 * The epochs trained so far, kept next to the checkpoints (file {@value #FILE_NAME}), so that a run
 * resumed after a crash still reports, and charts, the epochs of the attempts before it. The root
 * rewrites it at the end of every epoch, before that epoch's checkpoint; a resumed run keeps the
 * epochs its checkpoint had finished and trains the rest again.
 */
final class EpochHistory {

    static final String FILE_NAME = "epochs.json";
    private static final ObjectMapper JSON = JsonMapper.builder()
            .enable(JsonReadFeature.ALLOW_NON_NUMERIC_NUMBERS)
            .build();

    private EpochHistory() {}

    /**
     * The epochs in {@code dir} numbered up to {@code finishedEpochs} (those a checkpoint at that
     * epoch had finished); empty when there is no history, or it is unreadable (said on {@code warn}).
     */
    static List<TrainingSummary.EpochResult> read(Path dir, int finishedEpochs, PrintStream warn) {
        Path file = dir.resolve(FILE_NAME);
        List<TrainingSummary.EpochResult> all;
        try {
            all = JSON.readValue(Files.readAllBytes(file), new TypeReference<List<TrainingSummary.EpochResult>>() {});
        } catch (NoSuchFileException e) {
            return List.of();
        } catch (JacksonException e) {
            warn.println("fashion-mnist: " + file + " is not an epoch history (" + e.getOriginalMessage()
                    + "); the summary has this run's epochs only");
            return List.of();
        } catch (IOException e) {
            warn.println("fashion-mnist: cannot read " + file + " (" + e.getMessage()
                    + "); the summary has this run's epochs only");
            return List.of();
        }
        return all.stream().filter(e -> e.epoch() <= finishedEpochs).toList();
    }

    /** Replaces the history in {@code dir} with {@code epochs} (through a temporary file and a rename). */
    static void write(Path dir, List<TrainingSummary.EpochResult> epochs) {
        Path file = dir.resolve(FILE_NAME);
        Path tmp = dir.resolve(FILE_NAME + ".tmp");
        try {
            Files.createDirectories(dir);
            JSON.writeValue(tmp.toFile(), epochs);
            Files.move(tmp, file, StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot write the epoch history " + file + ": " + e.getMessage(), e);
        }
    }
}
