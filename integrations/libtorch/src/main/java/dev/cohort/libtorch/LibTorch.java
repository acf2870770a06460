package dev.cohort.libtorch;

import dev.cohort.api.BackendUnavailableException;
import java.io.IOException;
import java.nio.channels.FileChannel;
import java.nio.channels.FileLock;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Optional;
import org.bytedeco.javacpp.Loader;
import org.bytedeco.javacpp.Pointer;

/**
 * Loads libtorch (with c10d and Gloo) through JavaCPP, robustly.
 *
 * <p>Trap: on an empty JavaCPP cache, letting the first native call extract and load the
 * libraries crashes the JVM (SIGSEGV in {@code pthread_mutex_lock} during libtorch's static
 * initialization). Extracting the whole native directories first with
 * {@link Loader#cacheResources(String)} avoids it. Several workers may start at once on an empty
 * cache, so extraction is serialized between processes with a file lock in the cache directory
 * (bounded wait), and within this JVM by this class's monitor.
 */
public final class LibTorch {

    /** How long a process waits for another one to finish extracting the natives. */
    static final Duration EXTRACT_LOCK_TIMEOUT = Duration.ofMinutes(5);

    private static volatile boolean loaded;
    private static volatile boolean prepared;
    private static volatile Throwable failure;
    private static volatile String blas;

    private LibTorch() {}

    /**
     * Marks a native object Cohort keeps beyond the current call, so that a caller's
     * {@code PointerScope} (JavaCPP's usual training-loop idiom) does not free it when it closes.
     * Pair with {@link #release}.
     */
    public static <P extends Pointer> P retain(P p) {
        p.retainReference();
        return p;
    }

    /** Gives up what {@link #retain} kept; the object is freed once nothing else holds it. */
    public static void release(Pointer p) {
        if (p != null && !p.isNull()) {
            p.releaseReference();
        }
    }

    /** Whether libtorch loads; never throws. */
    public static boolean isLoadable() {
        try {
            load();
            return true;
        } catch (Throwable t) {
            return false;
        }
    }

    /** What went wrong loading, or an empty string. */
    public static String failureReason() {
        Throwable t = failure;
        if (t == null) {
            return "";
        }
        if (t instanceof ForeignLibtorchException || t instanceof HostBlas.BadSetting) {
            return t.getMessage(); // another libtorch in the process, or a bad COHORT_BLAS
        }
        return "libtorch (org.bytedeco:pytorch, linux-x86_64 natives) could not be loaded: " + t
                + "; Cohort's gloo engine needs Linux on x86-64 with the cohort-gloo module's dependencies on the class path";
    }

    /**
     * Another libtorch already mapped into this process (not JavaCPP's: e.g. DJL's PyTorch
     * engine), as its path from {@code /proc/self/maps}; empty when there is none, or not on Linux.
     * JavaCPP's libtorch cannot load beside it (their symbols collide).
     */
    public static Optional<String> foreignLibtorch() {
        return mappedLibtorch(false);
    }

    /**
     * JavaCPP's libtorch, when it is mapped into this process, as its path from {@code
     * /proc/self/maps}; empty when it is not, or not on Linux. Another framework's libtorch (DJL's)
     * cannot load beside it.
     */
    public static Optional<String> javacppLibtorch() {
        return mappedLibtorch(true);
    }

    private static Optional<String> mappedLibtorch(boolean javacpp) {
        try {
            for (String line : Files.readAllLines(Path.of("/proc/self/maps"))) {
                int slash = line.indexOf('/');
                if (slash < 0) {
                    continue;
                }
                String path = line.substring(slash);
                if (path.endsWith("/libtorch_cpu.so") && path.contains("org/bytedeco") == javacpp) {
                    return Optional.of(path);
                }
            }
        } catch (IOException | RuntimeException e) {
            // not Linux, or unreadable: nothing known
        }
        return Optional.empty();
    }

    /** Another libtorch is loaded: JavaCPP's would collide with it. */
    static final class ForeignLibtorchException extends IllegalStateException {
        private static final long serialVersionUID = 1L;

        ForeignLibtorchException(String path) {
            super("another libtorch is already loaded in this process (" + path + ", e.g. DJL's PyTorch engine); "
                    + "JavaCPP's libtorch, which the gloo and hier engines and the torch integration use, cannot load "
                    + "beside it: two libtorch builds cannot share a process. Use the tcp engine (any hosts) or shm "
                    + "(one host, JDK >= 22), which load no native library");
        }
    }

    /**
     * Loads libtorch once per JVM; call before touching any {@code org.bytedeco.pytorch} class.
     *
     * @throws BackendUnavailableException saying what is missing
     */
    public static synchronized void load() {
        if (loaded) {
            return;
        }
        prepare();
        refuseBesideForeignLibtorch(); // DJL's may have loaded since prepare()
        try {
            Loader.load(org.bytedeco.pytorch.global.torch.class);
            loaded = true;
        } catch (Throwable t) {
            failure = t;
            throw new BackendUnavailableException(failureReason(), t);
        }
    }

    /**
     * Makes the program's first use of libtorch safe without loading it: extracts the natives (one
     * process at a time) and loads the host's OpenBLAS when {@value HostBlas#VARIABLE} chooses one,
     * which must come before libtorch. After it, a program's first tensor loads libtorch from a full
     * cache; and until then another framework's libtorch (DJL's) can still load. Once per JVM.
     *
     * @throws BackendUnavailableException saying what is missing, or that another libtorch is loaded
     */
    public static synchronized void prepare() {
        if (prepared) {
            return;
        }
        if (failure != null) {
            throw new BackendUnavailableException(failureReason(), failure);
        }
        refuseBesideForeignLibtorch();
        try {
            String platform = Loader.getPlatform();
            List<Path> natives = extractUnderLock(
                    "/org/bytedeco/openblas/" + platform + "/", "/org/bytedeco/pytorch/" + platform + "/");
            blas = loadHostBlas(natives);
            prepared = true;
        } catch (Throwable t) {
            failure = t;
            throw new BackendUnavailableException(failureReason(), t);
        }
    }

    private static void refuseBesideForeignLibtorch() {
        Optional<String> foreign = foreignLibtorch();
        if (foreign.isPresent()) {
            failure = new ForeignLibtorchException(foreign.get());
            throw new BackendUnavailableException(failureReason(), failure);
        }
    }

    /**
     * What libtorch computes with: {@code "bundled OpenBLAS"} (with why, where the host's was passed
     * over), or {@code "host OpenBLAS PATH"} (see {@link HostBlas}); null before {@link #load}.
     */
    public static String blas() {
        return blas;
    }

    /**
     * Loads the host's OpenBLAS ahead of libtorch when {@link HostBlas} chooses one; says which BLAS is in use.
     *
     * @throws HostBlas.BadSetting when the setting is wrong or the host's library lacks a function
     */
    private static String loadHostBlas(List<Path> natives) throws IOException {
        String setting = HostBlas.setting(System.getenv());
        HostBlas.Choice choice = HostBlas.choose(setting, System.getenv("LD_LIBRARY_PATH"), HostBlas.usualFolders());
        if (choice.library() == null) {
            return "bundled OpenBLAS";
        }
        Path libtorch = find(natives, "libtorch_cpu.so");
        Path bundled = libtorch.resolveSibling(HostBlas.SONAME);
        if (!Files.isRegularFile(bundled)) {
            bundled = find(natives, HostBlas.SONAME);
        }
        Optional<Path> host = HostBlas.usable(choice, libtorch, bundled);
        if (host.isEmpty()) {
            return "bundled OpenBLAS (the host's " + choice.library() + " lacks functions libtorch calls)";
        }
        Path real = host.get().toRealPath();
        System.load(real.toString());
        return "host OpenBLAS " + real;
    }

    private static Path find(List<Path> dirs, String name) throws IOException {
        for (Path dir : dirs) {
            if (Files.isRegularFile(dir.resolve(name))) {
                return dir.resolve(name);
            }
        }
        throw new IOException(name + " is not among the extracted natives in " + dirs);
    }

    /** Extracts each resource folder into JavaCPP's cache; returns the folders extracted. */
    private static List<Path> extractUnderLock(String... resourceDirs) throws IOException, InterruptedException {
        Path cache = Loader.getCacheDir().toPath();
        Files.createDirectories(cache);
        try (FileChannel channel = FileChannel.open(
                cache.resolve(".cohort-extract.lock"), StandardOpenOption.CREATE, StandardOpenOption.WRITE)) {
            long deadline = System.nanoTime() + EXTRACT_LOCK_TIMEOUT.toNanos();
            FileLock lock;
            while ((lock = channel.tryLock()) == null) {
                if (System.nanoTime() > deadline) {
                    throw new IOException("another process held " + cache.resolve(".cohort-extract.lock")
                            + " for more than " + EXTRACT_LOCK_TIMEOUT + " while extracting native libraries");
                }
                Thread.sleep(50);
            }
            try {
                List<Path> extracted = new ArrayList<>();
                for (String dir : resourceDirs) {
                    for (java.io.File f : Loader.cacheResources(dir)) {
                        extracted.add(f.toPath());
                    }
                }
                return extracted;
            } finally {
                lock.release();
            }
        }
    }
}
