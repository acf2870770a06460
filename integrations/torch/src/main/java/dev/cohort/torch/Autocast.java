package dev.cohort.torch;

import org.bytedeco.pytorch.global.torch;

/**
 * A scope in which libtorch's CPU autocast runs matrix products and convolutions in a 16-bit type
 * on the calling thread (PyTorch's {@code torch.autocast("cpu", dtype)}): open it around the
 * forward pass and the loss, and call backward after closing it. The state is the thread's own;
 * close the scope on the thread that opened it. Scopes nest; closing restores what was before.
 */
public final class Autocast implements AutoCloseable {

    private static final Autocast NONE = new Autocast(null, false, null);

    private final Thread owner;
    private final boolean wasEnabled;
    private final torch.ScalarType wasType;
    private boolean open;

    private Autocast(Thread owner, boolean wasEnabled, torch.ScalarType wasType) {
        this.owner = owner;
        this.wasEnabled = wasEnabled;
        this.wasType = wasType;
        this.open = owner != null;
    }

    /** Whether this scope computes in another type than the enclosing one, {@code type} being this scope's. */
    private boolean changesType(torch.ScalarType type) {
        return wasEnabled && wasType.value != type.value;
    }

    /** Opens autocast in {@code precision}'s type; for {@link Precision#FP32} a scope that changes nothing. */
    public static Autocast open(Precision precision) {
        torch.ScalarType type = precision.autocastType();
        if (type == null) {
            return NONE;
        }
        Autocast scope = new Autocast(
                Thread.currentThread(),
                torch.is_autocast_enabled(torch.DeviceType.CPU),
                torch.get_autocast_dtype(torch.DeviceType.CPU));
        if (scope.changesType(type)) {
            torch.clear_cache(); // its weights were cast to the enclosing scope's type
        }
        torch.set_autocast_dtype(torch.DeviceType.CPU, type);
        torch.set_autocast_enabled(torch.DeviceType.CPU, true);
        torch.increment_nesting();
        return scope;
    }

    /**
     * Restores the thread's autocast state; the outermost scope also drops autocast's cache of
     * weights cast to 16 bits (they change at the next step). Closing twice is harmless.
     *
     * @throws IllegalStateException when called on another thread than the one that opened it
     */
    @Override
    public void close() {
        if (!open) {
            return;
        }
        if (Thread.currentThread() != owner) {
            throw new IllegalStateException("an autocast scope opened on thread '" + owner.getName()
                    + "' must be closed there (autocast's state is the thread's own), not on '"
                    + Thread.currentThread().getName() + "'");
        }
        open = false;
        if (torch.decrement_nesting() == 0 || changesType(torch.get_autocast_dtype(torch.DeviceType.CPU))) {
            torch.clear_cache();
        }
        torch.set_autocast_enabled(torch.DeviceType.CPU, wasEnabled);
        torch.set_autocast_dtype(torch.DeviceType.CPU, wasType);
    }
}
