package dev.cohort.libtorch;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeSet;

/**
 * Which OpenBLAS libtorch computes with: the one JavaCPP bundles (the default), or one installed
 * on the host, chosen with {@value #VARIABLE} (or the system property {@value #PROPERTY}):
 * {@code bundled}, {@code system} (the first {@code libopenblas.so.0} on {@code LD_LIBRARY_PATH}
 * or in the usual library folders), or the path of a {@code libopenblas.so.0}.
 *
 * <p>How: the host's library is loaded before libtorch, so libtorch's dependency on
 * {@code libopenblas.so.0} binds to it (the dynamic linker reuses a loaded library of that name).
 * Before that, its symbol table must define every BLAS and LAPACK function libtorch takes from
 * the bundled build: a library that lacked one would abort the process at its first call.
 */
public final class HostBlas {

    /** The environment variable that chooses (launchers pass it to every worker). */
    public static final String VARIABLE = "COHORT_BLAS";
    /** The system property that chooses, over {@link #VARIABLE}. */
    public static final String PROPERTY = "cohort.blas";

    static final String SONAME = "libopenblas.so.0";

    private HostBlas() {}

    /** A {@value #VARIABLE} that names no usable library; its message says what to do. */
    static final class BadSetting extends IllegalArgumentException {
        BadSetting(String message) {
            super(message);
        }
    }

    /**
     * The host library that {@code setting} chooses, or empty for the bundled one.
     *
     * @param setting        {@value #VARIABLE}'s value (null or blank: bundled)
     * @param libraryPath    {@code LD_LIBRARY_PATH} (may be null)
     * @param libraryFolders the usual library folders, searched after {@code libraryPath}
     * @throws BadSetting saying what was wrong and what to do
     */
    static Optional<Path> choose(String setting, String libraryPath, List<Path> libraryFolders) {
        if (setting == null || setting.isBlank() || setting.equals("bundled")) {
            return Optional.empty();
        }
        if (setting.equals("system")) {
            List<Path> searched = new ArrayList<>();
            if (libraryPath != null) {
                for (String dir : libraryPath.split(":")) {
                    if (!dir.isBlank()) {
                        searched.add(Path.of(dir));
                    }
                }
            }
            searched.addAll(libraryFolders);
            for (Path dir : searched) {
                Path candidate = dir.resolve(SONAME);
                if (Files.isRegularFile(candidate)) {
                    return Optional.of(candidate);
                }
            }
            throw new BadSetting(VARIABLE + "=system: no " + SONAME + " in " + searched
                    + "; install OpenBLAS (Debian: libopenblas0-pthread), give its path, or unset " + VARIABLE
                    + " to use the bundled one");
        }
        Path path = Path.of(setting);
        if (!path.isAbsolute() || !Files.isRegularFile(path)) {
            throw new BadSetting(VARIABLE + "=" + setting + ": expected bundled, system or the "
                    + "absolute path of an existing " + SONAME);
        }
        return Optional.of(path);
    }

    /** The usual folders of shared libraries on this platform, in search order. */
    static List<Path> usualFolders() {
        String arch = System.getProperty("os.arch");
        String multiarch = switch (arch) {
            case "amd64", "x86_64" -> "x86_64-linux-gnu";
            case "aarch64" -> "aarch64-linux-gnu";
            case "ppc64le" -> "powerpc64le-linux-gnu";
            default -> arch + "-linux-gnu";
        };
        return List.of(
                Path.of("/usr/local/lib"),
                Path.of("/usr/lib", multiarch),
                Path.of("/lib", multiarch),
                Path.of("/usr/lib64"),
                Path.of("/usr/lib"));
    }

    /**
     * Checks that {@code candidate} defines every symbol {@code libtorch} needs from
     * {@code bundled}: the BLAS and LAPACK functions libtorch calls.
     *
     * @throws BadSetting naming the missing functions (a few) and what to do
     * @throws IOException              when a library cannot be read as ELF
     */
    static void checkProvides(Path candidate, Path libtorch, Path bundled) throws IOException {
        Set<String> needed = new TreeSet<>(ElfSymbols.of(libtorch, false));
        needed.retainAll(ElfSymbols.of(bundled, true));
        needed.removeAll(ElfSymbols.of(candidate, true));
        if (!needed.isEmpty()) {
            List<String> some = needed.stream().limit(5).toList();
            throw new BadSetting(VARIABLE + ": " + candidate + " lacks " + needed.size()
                    + " function(s) libtorch calls, e.g. " + String.join(", ", some) + "; use a full OpenBLAS build "
                    + "with LAPACK, or unset " + VARIABLE + " to use the bundled one");
        }
    }

    /** The setting in effect: the system property, else the environment variable (null: none). */
    static String setting(Map<String, String> environment) {
        String property = System.getProperty(PROPERTY);
        return property != null ? property : environment.get(VARIABLE);
    }
}
