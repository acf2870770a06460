package dev.cohort.runtime;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;

/**
 * Every public type of a published module has a doc comment (the Javadoc build checks the rest
 * with doclint, but not whether a comment is there). Reads the sources of the whole checkout.
 */
class PublicTypesDocumentedTest {

    private static final Pattern PUBLIC_TYPE = Pattern.compile(
            "(?m)^[ \\t]*public (?:(?:final|abstract|sealed|non-sealed|static) )*(?:class|interface|enum|record|@interface) (\\w+)");
    /** Not published, so not documented for users: the demo's trainer and the benchmarks. */
    private static final List<String> UNPUBLISHED = List.of("examples", "tools/bench");

    @Test
    void everyPublicTypeHasADocComment() throws IOException {
        Path root = Path.of("..").toAbsolutePath().normalize();
        assertThat(root.resolve("api/src/main/java")).isDirectory();
        List<String> undocumented = new ArrayList<>();
        try (Stream<Path> files = Files.walk(root)) {
            files.filter(f -> f.toString().endsWith(".java") && f.toString().matches(".*/src/main/java\\d*/.*"))
                    .filter(f -> UNPUBLISHED.stream()
                            .noneMatch(u -> root.relativize(f).startsWith(u)))
                    .filter(f -> !root.relativize(f).toString().contains("/target/"))
                    .forEach(f -> undocumented.addAll(undocumentedTypes(root, f)));
        }
        assertThat(undocumented).as("public types without a doc comment").isEmpty();
    }

    private static List<String> undocumentedTypes(Path root, Path file) {
        String text;
        try {
            text = Files.readString(file);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        List<String> found = new ArrayList<>();
        Matcher m = PUBLIC_TYPE.matcher(text);
        while (m.find()) {
            // Between the end of the last comment and the declaration only annotations may stand.
            String before = text.substring(0, m.start());
            int comment = before.lastIndexOf("*/");
            String between = comment < 0 ? before : before.substring(comment + 2);
            if (comment < 0 || !onlyAnnotations(between)) {
                found.add(root.relativize(file) + ": " + m.group(1));
            }
        }
        return found;
    }

    private static boolean onlyAnnotations(String text) {
        String t = text.strip();
        return t.isEmpty() || (t.startsWith("@") && !t.contains(";") && !t.contains("{\n") && !t.contains("}\n"));
    }
}
