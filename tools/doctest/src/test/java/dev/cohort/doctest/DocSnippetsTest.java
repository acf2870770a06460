package dev.cohort.doctest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import javax.tools.JavaCompiler;
import javax.tools.ToolProvider;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

/**
 * Docs as code: every {@code ```java} block of README.md and docs/*.md is a complete compilation
 * unit (imports included, every variable declared) and compiles against the product's class path,
 * so what a user copies from the docs builds as it stands.
 */
@Timeout(value = 120, unit = TimeUnit.SECONDS)
class DocSnippetsTest {

    private static final Path ROOT = Path.of("../..").toAbsolutePath().normalize();
    private static final Pattern BLOCK = Pattern.compile("(?m)^( *)```java\\n(.*?)^\\1```", Pattern.DOTALL);
    private static final Pattern TYPE =
            Pattern.compile("(?m)^(?:@\\w+(?:\\([^)]*\\))? *)*public +(?:final +|abstract +)?"
                    + "(?:class|record|interface|enum) +(\\w+)");
    private static final Pattern PACKAGE = Pattern.compile("(?m)^package +([\\w.]+) *;");

    @TempDir
    Path out;

    record Snippet(Path file, int line, String code) {
        @Override
        public String toString() {
            return ROOT.relativize(file) + ":" + line;
        }
    }

    static List<Snippet> snippets() throws IOException {
        List<Path> files = new ArrayList<>(List.of(ROOT.resolve("README.md")));
        try (Stream<Path> docs = Files.list(ROOT.resolve("docs"))) {
            docs.filter(p -> p.toString().endsWith(".md")).sorted().forEach(files::add);
        }
        List<Snippet> all = new ArrayList<>();
        for (Path file : files) {
            String text = Files.readString(file);
            Matcher m = BLOCK.matcher(text);
            while (m.find()) {
                String indent = m.group(1);
                String code = m.group(2).replaceAll("(?m)^" + indent, "");
                int line = 1
                        + (int) text.substring(0, m.start())
                                .chars()
                                .filter(c -> c == '\n')
                                .count();
                all.add(new Snippet(file, line, code));
            }
        }
        return all;
    }

    @Test
    void theDocsHaveJavaSnippets() throws IOException {
        assertThat(snippets())
                .extracting(s -> ROOT.relativize(s.file()).toString())
                .contains("README.md", "docs/TORCH.md", "docs/DJL.md");
    }

    @Test
    void theReadmeProgramIsTheOneItsTestRuns() throws IOException {
        Path program = ROOT.resolve("runtime/src/test/java/dev/cohort/cli/readme/Train.java");
        assertThat(snippets())
                .filteredOn(s -> s.file().endsWith("README.md"))
                .extracting(Snippet::code)
                .contains(Files.readString(program));
    }

    @ParameterizedTest(name = "{0}")
    @MethodSource("snippets")
    void compilesAsItStands(Snippet snippet) throws IOException {
        Matcher type = TYPE.matcher(snippet.code());
        assertThat(type.find())
                .as(
                        "%s: a complete compilation unit with a public class (imports included), "
                                + "so that a user can copy it as it stands",
                        snippet)
                .isTrue();
        Matcher pkg = PACKAGE.matcher(snippet.code());
        Path dir = pkg.find() ? out.resolve(pkg.group(1).replace('.', '/')) : out;
        Path source = Files.createDirectories(dir).resolve(type.group(1) + ".java");
        Files.writeString(source, snippet.code(), StandardCharsets.UTF_8);
        JavaCompiler javac = ToolProvider.getSystemJavaCompiler();
        StringWriter errors = new StringWriter();
        Boolean ok = javac.getTask(
                        errors,
                        null,
                        null,
                        List.of(
                                "-proc:none",
                                "-Xlint:none",
                                "-d",
                                out.resolve("classes").toString(),
                                "-cp",
                                System.getProperty("java.class.path")),
                        null,
                        javac.getStandardFileManager(null, null, StandardCharsets.UTF_8)
                                .getJavaFileObjects(source))
                .call();
        assertThat(ok).as("%s does not compile:%n%s", snippet, errors).isTrue();
    }
}
