package dev.cohort.doctest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Map;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

/**
 * Each module's public top-level types are the ones {@code public-types.txt} allows, so that a type
 * becomes public on purpose: a new one fails here until it is listed (or made package-private), and a
 * listed one that is gone fails until the list drops it. {@code -Dcohort.publicTypes.write=true}
 * rewrites the list from the tree.
 */
@Timeout(60)
class PublicTypesTest {

    private static final Path ROOT = Path.of("../..").toAbsolutePath().normalize();
    private static final Path ALLOWED = Path.of("src/test/resources/public-types.txt");
    /** A top-level declaration: at the start of a line, so nested types (indented) do not match. */
    private static final Pattern PUBLIC_TYPE = Pattern.compile(
            "^public\\s+(?:(?:abstract|final|sealed|non-sealed|strictfp)\\s+)*(?:class|interface|enum|record|@interface)\\s+(\\w+)",
            Pattern.MULTILINE);

    @Test
    void everyModulesPublicTypesAreTheListedOnes() throws IOException {
        Map<String, Set<String>> found = publicTypesByModule();
        if (Boolean.getBoolean("cohort.publicTypes.write")) Files.writeString(ALLOWED, listing(found));
        Map<String, Set<String>> allowed = allowed();
        assertThat(found.keySet())
                .as("modules with public types; list each in %s", ALLOWED)
                .containsExactlyInAnyOrderElementsOf(allowed.keySet());
        for (String module : found.keySet()) {
            assertThat(found.get(module))
                    .as(
                            "public types of %s: make a new type package-private, or list it under '## %s' in %s"
                                    + " if users or other modules need it",
                            module, module, ALLOWED)
                    .containsExactlyInAnyOrderElementsOf(allowed.get(module));
        }
    }

    /** Module folder (relative to the root) to the fully qualified names of its public top-level types. */
    static Map<String, Set<String>> publicTypesByModule() throws IOException {
        Map<String, Set<String>> byModule = new TreeMap<>();
        try (Stream<Path> files = Files.walk(ROOT)) {
            for (Path file : files.filter(PublicTypesTest::isMainSource).toList()) {
                Matcher type = PUBLIC_TYPE.matcher(Files.readString(file));
                if (!type.find()) continue;
                Path relative = ROOT.relativize(file);
                int src = indexOf(relative, "src");
                String module = relative.subpath(0, src).toString();
                String pkg = relative.subpath(src + 3, relative.getNameCount() - 1)
                        .toString()
                        .replace('/', '.');
                byModule.computeIfAbsent(module, m -> new TreeSet<>()).add(pkg + "." + type.group(1));
            }
        }
        return byModule;
    }

    private static boolean isMainSource(Path file) {
        Path relative = ROOT.relativize(file);
        if (!file.toString().endsWith(".java") || relative.toString().contains("/target/")) return false;
        int src = indexOf(relative, "src");
        return src > 0
                && relative.getNameCount() > src + 3
                && relative.getName(src + 1).toString().equals("main")
                && relative.getName(src + 2).toString().startsWith("java");
    }

    private static int indexOf(Path path, String name) {
        for (int i = 0; i < path.getNameCount(); i++) {
            if (path.getName(i).toString().equals(name)) return i;
        }
        return -1;
    }

    private static Map<String, Set<String>> allowed() throws IOException {
        Map<String, Set<String>> allowed = new TreeMap<>();
        String module = null;
        for (String line : Files.readAllLines(ALLOWED)) {
            String text = line.strip();
            if (text.startsWith("## ")) {
                module = text.substring(3).strip();
                allowed.put(module, new TreeSet<>());
            } else if (!text.isEmpty() && !text.startsWith("#")) {
                if (module == null) throw new IllegalStateException(ALLOWED + ": a type before the first '## module'");
                allowed.get(module).add(text);
            }
        }
        return allowed;
    }

    private static String listing(Map<String, Set<String>> byModule) {
        StringBuilder text = new StringBuilder("# Each module's allowed public top-level types (PublicTypesTest).\n");
        byModule.forEach((module, types) -> {
            text.append("\n## ").append(module).append('\n');
            types.forEach(type -> text.append(type).append('\n'));
        });
        return text.toString();
    }
}
