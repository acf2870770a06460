package dev.cohort.torch;

import dev.cohort.libtorch.LibTorch;
import java.util.ArrayList;
import java.util.List;
import org.bytedeco.javacpp.Pointer;

/**
 * Keeps the gradient hooks registered on parameters reachable for the life of the process. A hook
 * stays registered as long as its parameter lives, which can outlive whatever registered it (an
 * optimizer distributed again after an elastic re-form); a hook the garbage collector freed would
 * make the next backward pass fail inside native code. Retired hooks do nothing when called.
 */
final class LiveHooks {

    private static final List<Pointer> HOOKS = new ArrayList<>();

    private LiveHooks() {}

    /** {@code hook}, retained and kept reachable from now on. */
    static synchronized <H extends Pointer> H keep(H hook) {
        HOOKS.add(LibTorch.retain(hook));
        return hook;
    }
}
