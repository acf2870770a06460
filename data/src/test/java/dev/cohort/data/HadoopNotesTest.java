package dev.cohort.data;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(30)
class HadoopNotesTest {

    @Test
    void openingADatasetQuietsHadoopsNotesUnlessTheProgramSetTheirLevel(@TempDir Path dir) {
        Logger nativeCode = Logger.getLogger("org.apache.hadoop.util.NativeCodeLoader");
        Logger codecs = Logger.getLogger("org.apache.hadoop.io.compress.CodecPool");
        nativeCode.setLevel(null);
        codecs.setLevel(Level.FINE); // the program's own choice
        try {
            ParquetDataset.open(Shards.write(dir, 10, 5, 10), ColumnMapping.list("features", "label"));
            assertThat(nativeCode.getLevel()).isEqualTo(Level.SEVERE);
            assertThat(codecs.getLevel()).isEqualTo(Level.FINE);
        } finally {
            codecs.setLevel(null);
            HadoopNotes.quiet();
        }
        assertThat(List.of(nativeCode.getLevel(), codecs.getLevel())).containsOnly(Level.SEVERE);
    }
}
