package dev.cohort.launcher;

import java.io.File;
import java.net.MalformedURLException;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.regex.Pattern;

/**
 * The program each worker runs, as a command line: a Java main class (run with this JVM's
 * {@code java} and a class path), a jar ({@code java -jar}), or any command.
 */
public final class WorkerProgram {

    /** A class name, dotted or not (a class in the default package). */
    private static final Pattern CLASS_NAME =
            Pattern.compile("[\\p{javaJavaIdentifierStart}][\\p{javaJavaIdentifierPart}]*"
                    + "(\\.[\\p{javaJavaIdentifierStart}][\\p{javaJavaIdentifierPart}]*)*");

    /** A class of DJL's API, which a program that uses DJL has on its class path. */
    static final String DJL_CLASS = "ai.djl.engine.Engine";

    private final List<String> command;
    private final String description;
    /** Where the program's classes are (a class path, or the jar); null for a command. */
    private final String classPath;

    private WorkerProgram(List<String> command, String description, String classPath) {
        this.command = List.copyOf(command);
        this.description = description;
        this.classPath = classPath;
    }

    /**
     * Whether the program uses DJL: DJL's API is on its class path (for a command, not known:
     * false). DJL's PyTorch engine loads its own libtorch, so such a program cannot use an engine
     * that loads JavaCPP's (gloo).
     */
    public boolean usesDjl() {
        return classPath != null && loadable(DJL_CLASS, classPath);
    }

    /** The command line a worker process runs. */
    public List<String> command() {
        return command;
    }

    /** Whether the program is a Java main class or jar (whose Cohort records its joining a group), not a command. */
    public boolean isJava() {
        return !description.startsWith("command ");
    }

    /** "main class x.Y", "jar app.jar" or "command sh". */
    public String description() {
        return description;
    }

    /**
     * Runs {@code mainClass} with this JVM's class path and this JVM's module options
     * ({@code --add-modules}, {@code --enable-native-access}, ...), so an engine that needs an
     * incubator module works in the workers when it works here.
     */
    public static WorkerProgram mainClass(String mainClass, List<String> args) {
        return mainClass(mainClass, args, System.getProperty("java.class.path"), inheritedModuleOptions());
    }

    /**
     * The JVM options a Java worker gets: this JVM's module and native-access options, those the
     * engines on the class path need ({@link dev.cohort.api.BackendProvider#jvmOptions()}), and this
     * JVM's logging options, or else one-line log records ({@link LogFormat}), once each.
     */
    static List<String> inheritedModuleOptions() {
        java.util.LinkedHashSet<String> options = new java.util.LinkedHashSet<>(thisJvmsModuleOptions());
        for (var engine : dev.cohort.api.Backends.discover().values()) {
            options.addAll(engine.jvmOptions());
        }
        options.addAll(LogFormat.workerOptions());
        return List.copyOf(options);
    }

    /** This JVM's options that workers on the same class path need too. */
    private static List<String> thisJvmsModuleOptions() {
        List<String> inherited = new ArrayList<>();
        List<String> input =
                java.lang.management.ManagementFactory.getRuntimeMXBean().getInputArguments();
        for (int i = 0; i < input.size(); i++) {
            String a = input.get(i);
            if (a.startsWith("--add-modules=")
                    || a.startsWith("--enable-native-access")
                    || a.startsWith("--add-opens=")
                    || a.startsWith("--add-exports=")
                    || a.startsWith("--sun-misc-unsafe-memory-access=")) {
                inherited.add(a);
            } else if ((a.equals("--add-modules") || a.equals("--add-opens") || a.equals("--add-exports"))
                    && i + 1 < input.size()) {
                inherited.add(a);
                inherited.add(input.get(++i));
            }
        }
        return inherited;
    }

    /** Runs {@code mainClass} with {@code classPath} and extra JVM options (e.g. {@code -Xmx2g}). */
    public static WorkerProgram mainClass(
            String mainClass, List<String> args, String classPath, List<String> jvmOptions) {
        Objects.requireNonNull(mainClass, "mainClass");
        List<String> cmd = new ArrayList<>();
        cmd.add(javaExecutable());
        cmd.addAll(jvmOptions);
        cmd.add("-cp");
        cmd.add(Objects.requireNonNull(classPath, "classPath"));
        cmd.add(mainClass);
        cmd.addAll(args);
        return new WorkerProgram(cmd, "main class " + mainClass, classPath);
    }

    /** Runs {@code java -jar jar args...} with this JVM's {@code java} and module options. */
    public static WorkerProgram jar(Path jar, List<String> args) {
        List<String> cmd = new ArrayList<>(List.of(javaExecutable()));
        cmd.addAll(inheritedModuleOptions());
        cmd.addAll(List.of("-jar", jar.toString()));
        cmd.addAll(args);
        return new WorkerProgram(cmd, "jar " + jar, jar.toString());
    }

    /** Runs a command as is: {@code command.get(0)} is a path or a name on PATH. */
    public static WorkerProgram command(List<String> command) {
        if (command.isEmpty()) {
            throw new IllegalArgumentException("the worker command is empty");
        }
        return new WorkerProgram(command, "command " + command.get(0), null);
    }

    /**
     * Reads the program tokens after {@code --} as {@code ./cohort run} does: a token ending in
     * {@code .jar} is a jar; a name that loads as a class from {@code classPath}, dotted or not
     * ({@code SimpleMNIST} in the default package), is a main class, even when a command of that
     * name is on PATH (name the command by its path to run it); a path or another name on PATH is
     * a command; any other dotted name is a main class that does not exist, reported as such.
     *
     * @throws IllegalArgumentException when there is no program, or it cannot be found
     */
    public static WorkerProgram resolve(List<String> tokens, String classPath) {
        return resolve(tokens, null, classPath);
    }

    /**
     * As {@link #resolve(List, String)}, for a program whose classes are on {@code userClassPath}
     * (the launcher's {@code --classpath}; {@code null} or blank for none), which goes ahead of
     * {@code cohortClassPath} on a main class's class path. A jar or a command brings its own
     * class path, so a user class path with one is refused.
     *
     * @throws IllegalArgumentException also for an entry of {@code userClassPath} that does not exist
     */
    public static WorkerProgram resolve(List<String> tokens, String userClassPath, String cohortClassPath) {
        boolean userGiven = userClassPath != null && !userClassPath.isBlank();
        if (!userGiven) {
            return resolveOn(tokens, cohortClassPath);
        }
        checkEntries(userClassPath);
        WorkerProgram program = resolveOn(tokens, userClassPath + File.pathSeparator + cohortClassPath);
        if (!program.description.startsWith("main class ")) {
            throw new IllegalArgumentException("--classpath is for a main class, but the program is a "
                    + program.description
                    + ", which brings its own class path; drop --classpath (and COHORT_CLASSPATH), "
                    + "or name the main class");
        }
        return program;
    }

    /** Every entry of a user's class path exists: a jar, a folder, or {@code folder/*}. */
    private static void checkEntries(String classPath) {
        for (String entry : classPath.split(File.pathSeparator)) {
            if (entry.isEmpty()) {
                continue;
            }
            Path p = Path.of(
                    entry.endsWith("/*") || entry.equals("*") ? entry.substring(0, entry.length() - 1) + "." : entry);
            if (!Files.exists(p)) {
                throw new IllegalArgumentException("class path entry " + entry + " does not exist (working directory "
                        + Path.of("").toAbsolutePath() + "); check --classpath / COHORT_CLASSPATH");
            }
        }
    }

    private static WorkerProgram resolveOn(List<String> tokens, String classPath) {
        if (tokens.isEmpty() || tokens.get(0).isBlank()) {
            throw new IllegalArgumentException("no program to start: put it after '--', e.g. "
                    + "`./cohort run --nproc-per-node 2 -- com.example.Train` or `... -- python3 train.py`");
        }
        String first = tokens.get(0);
        List<String> args = tokens.subList(1, tokens.size());
        if (first.endsWith(".jar")) {
            Path jar = Path.of(first);
            if (!Files.isRegularFile(jar)) {
                throw new IllegalArgumentException("jar " + first + " does not exist (working directory "
                        + Path.of("").toAbsolutePath() + ")");
            }
            return jar(jar.toAbsolutePath(), args);
        }
        if (first.contains("/")) {
            Path p = Path.of(first);
            if (!Files.isRegularFile(p) || !Files.isExecutable(p)) {
                throw new IllegalArgumentException(
                        first + " is not an executable file; check the path or `chmod +x` it");
            }
            return command(tokens);
        }
        boolean className = CLASS_NAME.matcher(first).matches() && first.contains(".");
        if (CLASS_NAME.matcher(first).matches() && loadable(first, classPath)) {
            return mainClass(first, args, classPath, inheritedModuleOptions());
        }
        if (onPath(first)) {
            return command(tokens);
        }
        if (className) {
            throw new IllegalArgumentException("main class " + first + " does not exist on the class path; check the "
                    + "name, build its module (mvn package), or give a jar or a command instead");
        }
        if (CLASS_NAME.matcher(first).matches()) {
            throw new IllegalArgumentException("'" + first + "' is neither a class on the class path nor a command on "
                    + "PATH; for a main class, give its jar or classes folder with -cp (and check the name, with its "
                    + "package); for a command, give its full path");
        }
        throw new IllegalArgumentException("command '" + first + "' was not found on PATH; give its full path");
    }

    private static boolean loadable(String name, String classPath) {
        List<URL> urls = new ArrayList<>();
        for (String entry : classPath.split(File.pathSeparator)) {
            for (Path p : expand(entry)) {
                try {
                    urls.add(p.toUri().toURL());
                } catch (MalformedURLException | RuntimeException e) {
                    // An entry that is no path cannot hold the class.
                }
            }
        }
        try (URLClassLoader loader =
                new URLClassLoader(urls.toArray(new URL[0]), ClassLoader.getPlatformClassLoader())) {
            Class.forName(name, false, loader);
            return true;
        } catch (ClassNotFoundException | LinkageError e) {
            return false;
        } catch (java.io.IOException e) {
            return true;
        }
    }

    /** A class path entry as java reads it: {@code dir/*} is every jar in {@code dir}. */
    private static List<Path> expand(String entry) {
        if (entry.isEmpty()) {
            return List.of();
        }
        if (!entry.equals("*") && !entry.endsWith(File.separator + "*")) {
            return List.of(Path.of(entry));
        }
        Path dir = Path.of(entry.substring(0, entry.length() - 1) + ".");
        try (var jars = Files.list(dir)) {
            return jars.filter(
                            j -> j.toString().endsWith(".jar") || j.toString().endsWith(".JAR"))
                    .sorted()
                    .toList();
        } catch (java.io.IOException | RuntimeException e) {
            return List.of();
        }
    }

    private static boolean onPath(String name) {
        String path = System.getenv("PATH");
        if (path == null) {
            return false;
        }
        for (String dir : path.split(File.pathSeparator)) {
            Path candidate = Path.of(dir.isEmpty() ? "." : dir, name);
            if (Files.isRegularFile(candidate) && Files.isExecutable(candidate)) {
                return true;
            }
        }
        return false;
    }

    static String javaExecutable() {
        return Path.of(System.getProperty("java.home"), "bin", "java").toString();
    }

    @Override
    public String toString() {
        return String.join(" ", command);
    }
}
