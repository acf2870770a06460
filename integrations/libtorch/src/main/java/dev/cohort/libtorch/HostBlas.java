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
 * Which OpenBLAS libtorch computes with, chosen with {@value #VARIABLE} (or the system property
 * {@value #PROPERTY}): {@code auto} (the default) takes the host's {@code libopenblas.so.0} where
 * there is one that defines every function libtorch calls, else the one JavaCPP bundles; {@code
 * bundled}; {@code system} (the first {@code libopenblas.so.0} on {@code LD_LIBRARY_PATH} or in
 * the usual library folders, required); or the path of a {@code libopenblas.so.0}. The rule behind
 * {@code auto}: on every machine measured, the host's build was as fast as the bundled one or
 * faster (docs/TORCH.md).
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
     * What a setting chooses: a host library ({@code library}, null for the bundled one), which
     * must be usable when the setting named it ({@code required}) and is only preferred under
     * {@code auto}, where an unusable one leaves the bundled build.
     */
    record Choice(Path library, boolean required) {
        static final Choice BUNDLED = new Choice(null, false);
    }

    /**
     * The library that {@code setting} chooses.
     *
     * @param setting        {@value #VARIABLE}'s value (null or blank: auto)
     * @param libraryPath    {@code LD_LIBRARY_PATH} (may be null)
     * @param libraryFolders the usual library folders, searched after {@code libraryPath}
     * @throws BadSetting saying what was wrong and what to do
     */
    static Choice choose(String setting, String libraryPath, List<Path> libraryFolders) {
        if (setting == null || setting.isBlank() || setting.equals("auto")) {
            return find(libraryPath, libraryFolders)
                    .map(p -> new Choice(p, false))
                    .orElse(Choice.BUNDLED);
        }
        if (setting.equals("bundled")) {
            return Choice.BUNDLED;
        }
        if (setting.equals("system")) {
            return find(libraryPath, libraryFolders)
                    .map(p -> new Choice(p, true))
                    .orElseThrow(() -> new BadSetting(VARIABLE + "=system: no " + SONAME + " in "
                            + searched(libraryPath, libraryFolders)
                            + "; install OpenBLAS (Debian: libopenblas0-pthread), give its path, or unset " + VARIABLE
                            + " to use the bundled one"));
        }
        Path path = Path.of(setting);
        if (!path.isAbsolute() || !Files.isRegularFile(path)) {
            throw new BadSetting(VARIABLE + "=" + setting + ": expected auto, bundled, system or the "
                    + "absolute path of an existing " + SONAME);
        }
        return new Choice(path, true);
    }

    /** The first {@value #SONAME} in {@link #searched} order. */
    private static Optional<Path> find(String libraryPath, List<Path> libraryFolders) {
        for (Path dir : searched(libraryPath, libraryFolders)) {
            Path candidate = dir.resolve(SONAME);
            if (Files.isRegularFile(candidate)) {
                return Optional.of(candidate);
            }
        }
        return Optional.empty();
    }

    /** The folders of {@code libraryPath}, then {@code libraryFolders}. */
    private static List<Path> searched(String libraryPath, List<Path> libraryFolders) {
        List<Path> searched = new ArrayList<>();
        if (libraryPath != null) {
            for (String dir : libraryPath.split(":")) {
                if (!dir.isBlank()) {
                    searched.add(Path.of(dir));
                }
            }
        }
        searched.addAll(libraryFolders);
        return searched;
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

    /**
     * The host library to load for {@code choice}, or empty for the bundled one: {@code auto}'s
     * preferred library only where it {@linkplain #checkProvides provides} what libtorch calls.
     *
     * @throws BadSetting where a required library does not
     * @throws IOException where a required library cannot be read as ELF
     */
    static Optional<Path> usable(Choice choice, Path libtorch, Path bundled) throws IOException {
        if (choice.library() == null) {
            return Optional.empty();
        }
        try {
            checkProvides(choice.library(), libtorch, bundled);
            return Optional.of(choice.library());
        } catch (BadSetting | IOException e) {
            if (choice.required()) {
                throw e;
            }
            return Optional.empty();
        }
    }

    /** The setting in effect: the system property, else the environment variable (null: none). */
    static String setting(Map<String, String> environment) {
        String property = System.getProperty(PROPERTY);
        return property != null ? property : environment.get(VARIABLE);
    }
}
