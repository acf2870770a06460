package dev.cohort.doctest;

import static org.assertj.core.api.Assertions.assertThat;

import java.io.IOException;
import java.lang.reflect.Modifier;
import java.net.URISyntaxException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.jar.JarFile;
import org.junit.jupiter.api.Test;

/**
 * The integrations' public types share no simple name with a type of the framework packages a
 * program imports beside them (often with wildcards), so both imports resolve without qualifying.
 */
class ApiNamesTest {

    private static final List<String> LIBTORCH_PACKAGES =
            List.of("org.bytedeco.pytorch", "org.bytedeco.pytorch.global");
    private static final List<String> DJL_PACKAGES = List.of(
            "ai.djl",
            "ai.djl.engine",
            "ai.djl.metric",
            "ai.djl.ndarray",
            "ai.djl.ndarray.types",
            "ai.djl.nn",
            "ai.djl.nn.core",
            "ai.djl.training",
            "ai.djl.training.dataset",
            "ai.djl.training.evaluator",
            "ai.djl.training.initializer",
            "ai.djl.training.listener",
            "ai.djl.training.loss",
            "ai.djl.training.optimizer",
            "ai.djl.training.tracker",
            "ai.djl.training.util",
            "ai.djl.translate",
            "ai.djl.util");

    @Test
    void theTorchIntegrationsTypesDoNotClashWithLibtorchs() throws Exception {
        assertThat(clashes(dev.cohort.torch.TorchTraining.class, LIBTORCH_PACKAGES))
                .isEmpty();
    }

    @Test
    void theDjlIntegrationsTypesDoNotClashWithDjls() throws Exception {
        assertThat(clashes(dev.cohort.djl.DistributedTrainer.class, DJL_PACKAGES))
                .isEmpty();
    }

    /** Public top-level types of {@code anchor}'s package whose simple name a type of {@code packages} also has. */
    private static List<String> clashes(Class<?> anchor, List<String> packages) throws IOException, URISyntaxException {
        List<String> found = new ArrayList<>();
        for (String name : publicTypes(anchor)) {
            for (String pkg : packages) {
                try {
                    Class.forName(pkg + "." + name, false, ApiNamesTest.class.getClassLoader());
                    found.add(anchor.getPackageName() + "." + name + " and " + pkg + "." + name);
                } catch (ClassNotFoundException e) {
                    // no clash
                }
            }
        }
        return found;
    }

    private static List<String> publicTypes(Class<?> anchor) throws IOException, URISyntaxException {
        Path location = Path.of(
                anchor.getProtectionDomain().getCodeSource().getLocation().toURI());
        String dir = anchor.getPackageName().replace('.', '/') + "/";
        List<String> entries = new ArrayList<>();
        if (Files.isDirectory(location)) {
            try (var files = Files.list(location.resolve(dir))) {
                files.forEach(f -> entries.add(dir + f.getFileName()));
            }
        } else {
            try (JarFile jar = new JarFile(location.toFile())) {
                jar.stream().forEach(e -> entries.add(e.getName()));
            }
        }
        List<String> names = new ArrayList<>();
        for (String entry : entries) {
            String rest = entry.startsWith(dir) ? entry.substring(dir.length()) : "";
            if (rest.endsWith(".class") && !rest.contains("/") && !rest.contains("$")) {
                String simple = rest.substring(0, rest.length() - ".class".length());
                try {
                    Class<?> type = Class.forName(
                            anchor.getPackageName() + "." + simple, false, ApiNamesTest.class.getClassLoader());
                    if (Modifier.isPublic(type.getModifiers())) {
                        names.add(simple);
                    }
                } catch (ClassNotFoundException | LinkageError e) {
                    names.add(simple);
                }
            }
        }
        assertThat(names).as("public types of %s", anchor.getPackageName()).isNotEmpty();
        return names;
    }
}
