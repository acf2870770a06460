package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.File;
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarFile;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/**
 * The archive's lib/ is what {@code cohort run} gives its workers (bin/cohort passes it as
 * {@code -Dcohort.workers.classpath}): no SLF4J binding and no DJL there, so that a program that
 * brings its own meets no second one; those go to lib/tools/, the command's own. Checked over this
 * module's runtime dependencies (this test's class path) against the assembly descriptor.
 */
@Timeout(30)
class DistributionLayoutTest {

    private static final Path DESCRIPTOR = Path.of("src/assembly/dist.xml");

    /** The patterns ({@code groupId:artifactId}, {@code *} for any) of {@code tag} in the set that goes to {@code dir}. */
    private static List<String> patterns(String dir, String tag) throws Exception {
        var doc = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(DESCRIPTOR.toFile());
        NodeList sets = doc.getElementsByTagName("dependencySet");
        for (int i = 0; i < sets.getLength(); i++) {
            Element set = (Element) sets.item(i);
            if (set.getElementsByTagName("outputDirectory")
                    .item(0)
                    .getTextContent()
                    .trim()
                    .equals(dir)) {
                List<String> out = new ArrayList<>();
                NodeList items = set.getElementsByTagName(tag);
                for (int k = 0; k < items.getLength(); k++) {
                    out.add(items.item(k).getTextContent().trim());
                }
                return out;
            }
        }
        throw new AssertionError("no dependencySet for " + dir + " in " + DESCRIPTOR);
    }

    private static boolean matches(String coordinates, List<String> patterns) {
        for (String p : patterns) {
            String[] g = p.split(":");
            String[] c = coordinates.split(":");
            if (segment(g[0], c[0]) && segment(g[1], c[1])) {
                return true;
            }
        }
        return false;
    }

    private static boolean segment(String pattern, String value) {
        return pattern.equals("*") || pattern.equals(value);
    }

    /** {@code groupId:artifactId} of a jar in the local Maven repository, else null (a module's classes). */
    private static String coordinates(Path jar) {
        List<String> parts = new ArrayList<>();
        jar.forEach(p -> parts.add(p.toString()));
        int repo = parts.indexOf("repository");
        if (repo < 0 || parts.size() - repo < 5) {
            return null;
        }
        String group = String.join(".", parts.subList(repo + 1, parts.size() - 3));
        return group + ":" + parts.get(parts.size() - 3);
    }

    private static boolean isSlf4jBinding(Path jar) throws IOException {
        try (JarFile j = new JarFile(jar.toFile())) {
            return j.getEntry("META-INF/services/org.slf4j.spi.SLF4JServiceProvider") != null
                    || j.getEntry("org/slf4j/impl/StaticLoggerBinder.class") != null;
        }
    }

    @Test
    void noSlf4jBindingAndNoDjlOnTheWorkersClassPath() throws Exception {
        List<String> excluded = patterns("lib", "exclude");
        assertThat(patterns("lib/tools", "include"))
                .as("lib/tools/ takes exactly what lib/ leaves out")
                .containsExactlyElementsOf(excluded);
        List<String> bindings = new ArrayList<>();
        List<String> djl = new ArrayList<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path jar = Path.of(entry);
            String coordinates = coordinates(jar);
            if (coordinates == null
                    || !Files.isRegularFile(jar)
                    || coordinates.startsWith("org.junit")
                    || coordinates.startsWith("org.assertj")
                    || coordinates.startsWith("org.opentest4j")
                    || coordinates.startsWith("org.apiguardian")
                    || coordinates.startsWith("net.bytebuddy")) {
                continue;
            }
            if (isSlf4jBinding(jar)) {
                bindings.add(coordinates);
            }
            if (coordinates.startsWith("ai.djl")) {
                djl.add(coordinates);
            }
        }
        assertThat(bindings)
                .as("the runtime dependencies have an SLF4J binding (else this test checks nothing)")
                .isNotEmpty()
                .allMatch(c -> matches(c, excluded), "kept out of lib/");
        assertThat(djl)
                .as("DJL among the runtime dependencies")
                .isNotEmpty()
                .allMatch(c -> matches(c, excluded), "kept out of lib/");
        assertThat(matches("dev.cohort:cohort-gloo", excluded)).isFalse();
        assertThat(matches("org.bytedeco:pytorch", excluded)).isFalse();
    }

    /**
     * Every Cohort jar names its module for the module path (Automatic-Module-Name): {@code dev.}
     * and its artifact id with dots for dashes, its root package; and every entry of every jar
     * carries one date, the build's {@code project.build.outputTimestamp}, so that two builds of
     * one commit give the same jars. Checked over the Cohort jars on this test's class path (a
     * build that stops before packaging has none: skipped).
     */
    @Test
    void everyCohortJarNamesItsModuleAndDatesItsEntriesAlike() throws IOException {
        List<String> checked = new ArrayList<>();
        java.util.Set<Long> entryTimes = new java.util.TreeSet<>();
        for (String entry : System.getProperty("java.class.path").split(File.pathSeparator)) {
            Path jar = Path.of(entry);
            String file = jar.getFileName().toString();
            if (!Files.isRegularFile(jar) || !file.matches("cohort-[a-z-]+-\\d.*\\.jar")) {
                continue;
            }
            String artifact = file.replaceFirst("-\\d.*$", "");
            try (JarFile j = new JarFile(jar.toFile())) {
                assertThat(j.getManifest().getMainAttributes().getValue("Automatic-Module-Name"))
                        .as(file)
                        .isEqualTo("dev." + artifact.replace('-', '.'));
                j.stream().forEach(e -> entryTimes.add(e.getTime()));
            }
            checked.add(artifact);
        }
        assumeTrue(!checked.isEmpty(), "no Cohort jar on the class path (modules' classes only)");
        assertThat(checked).contains("cohort-api", "cohort-runtime", "cohort-tcp", "cohort-launcher");
        assertThat(entryTimes).as("the entries' dates in " + checked).hasSize(1);
    }

    @Test
    void binCohortGivesTheWorkersLibOnly() throws IOException {
        assertThat(Files.readString(Path.of("src/bin/cohort")))
                .contains("-Dcohort.workers.classpath=\"$home/lib/*\" -cp \"$home/lib/*:$home/lib/tools/*\"");
        assertThat(dev.cohort.launcher.LauncherMain.WORKERS_CLASSPATH).isEqualTo("cohort.workers.classpath");
    }

    /** Arrow IPC datasets need java.nio open; the launcher hands its JVM's --add-opens to the workers. */
    @Test
    void binCohortOpensJavaNioToArrow() throws IOException {
        assertThat(Files.readString(Path.of("src/bin/cohort")))
                .contains("opts=\"--add-opens=java.base/java.nio=ALL-UNNAMED\"");
        assertThat(Files.readString(Path.of("../../cohort")))
                .contains("local opts=\"--add-opens=java.base/java.nio=ALL-UNNAMED\"");
    }
}
