package dev.cohort.data;

import java.util.List;
import java.util.logging.Level;
import java.util.logging.Logger;

/**
 * Hadoop's client notes on every run of a program that reads or writes a dataset ("Unable to load
 * native-hadoop library", "Got brand-new decompressor") say nothing to its user: through
 * java.util.logging (SLF4J's JDK binding) they are kept from the console, unless the program has
 * set these loggers' levels itself. Held here, as java.util.logging keeps its loggers weakly.
 */
final class HadoopNotes {

    private static final List<Logger> NOTES = List.of(
            Logger.getLogger("org.apache.hadoop.util.NativeCodeLoader"),
            Logger.getLogger("org.apache.hadoop.io.compress.CodecPool"));

    private HadoopNotes() {}

    static void quiet() {
        for (Logger logger : NOTES) {
            if (logger.getLevel() == null) {
                logger.setLevel(Level.SEVERE);
            }
        }
    }
}
