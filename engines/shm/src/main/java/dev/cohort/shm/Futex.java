package dev.cohort.shm;

import java.lang.foreign.FunctionDescriptor;
import java.lang.foreign.Linker;
import java.lang.foreign.MemorySegment;
import java.lang.foreign.ValueLayout;
import java.lang.invoke.MethodHandle;
import java.util.Locale;

/**
 * Linux futexes on words of a shared mapping, called through {@code syscall(2)}: a rank that waits
 * long sleeps in the kernel until the rank it waits for stores its counter and wakes it, instead
 * of waking on a timer over and over. Shared (not {@code _PRIVATE}) operations: the word lies in a
 * file mapping of several processes, which the kernel keys by file and offset.
 *
 * <p>{@link #AVAILABLE} is false off Linux on x86-64 and AArch64; callers then park on a timer.
 */
final class Futex {

    private static final int FUTEX_WAIT = 0;
    private static final int FUTEX_WAKE = 1;
    private static final MethodHandle SYSCALL;
    private static final long SYS_FUTEX;

    /** Whether {@link #await} and {@link #wakeAll} work on this platform. */
    static final boolean AVAILABLE;

    static {
        String os = System.getProperty("os.name", "").toLowerCase(Locale.ROOT);
        String arch = System.getProperty("os.arch", "");
        long number = !os.startsWith("linux")
                ? -1
                : arch.equals("amd64") || arch.equals("x86_64") ? 202 : arch.equals("aarch64") ? 98 : -1;
        MethodHandle handle = null;
        if (number >= 0) {
            Linker linker = Linker.nativeLinker();
            // long syscall(long number, ...): each argument is passed as a long (pointers, ints).
            handle = linker.defaultLookup()
                    .find("syscall")
                    .map(s -> linker.downcallHandle(
                            s,
                            FunctionDescriptor.of(
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG,
                                    ValueLayout.JAVA_LONG),
                            Linker.Option.firstVariadicArg(1)))
                    .orElse(null);
        }
        SYSCALL = handle;
        SYS_FUTEX = number;
        AVAILABLE = handle != null;
    }

    private Futex() {}

    /**
     * Sleeps while the 32-bit word at {@code address} holds {@code expected}, until a
     * {@link #wakeAll} on it or for at most {@code nanos}; returns at once when the word differs.
     * A return says nothing: the caller reads the word again. {@code timespec} is 16 bytes this
     * thread may overwrite.
     */
    static void await(long address, int expected, long nanos, MemorySegment timespec) {
        timespec.set(ValueLayout.JAVA_LONG, 0, nanos / 1_000_000_000L);
        timespec.set(ValueLayout.JAVA_LONG, 8, nanos % 1_000_000_000L);
        call(address, FUTEX_WAIT, expected & 0xFFFF_FFFFL, timespec.address());
    }

    /** Wakes every thread sleeping on the word at {@code address}. */
    static void wakeAll(long address) {
        call(address, FUTEX_WAKE, Integer.MAX_VALUE, 0);
    }

    private static void call(long address, int op, long value, long timeout) {
        try {
            long ignored = (long) SYSCALL.invokeExact(SYS_FUTEX, address, (long) op, value, timeout, 0L, 0L);
        } catch (Throwable t) {
            throw new IllegalStateException("futex call failed", t);
        }
    }
}
