import dev.cohort.libtorch.LibTorch;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.bytedeco.javacpp.Pointer;
import org.bytedeco.pytorch.LinearImpl;
import org.bytedeco.pytorch.NoGradGuard;
import org.bytedeco.pytorch.Storage;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.TensorBase;
import org.bytedeco.pytorch.VoidTensorHook;
import org.bytedeco.pytorch.global.torch;

/**
 * ZeRO-3's mechanism on JavaCPP's libtorch, one process, three Linear units under tanh: each unit's
 * weight freed after its forward and brought back by a hook on the unit's output before its
 * backward; the gradients must equal a plain run's bit for bit. Two ways to free:
 * "set-data" (the weight set_data to 0 elements and back) and "storage" (the weight a view of a
 * gathered tensor whose StorageImpl is reset, freeing it under autograd's saved views too, then
 * re-allocated and filled by memcpy, as an all-gather's receive would, without a version bump).
 */
public class Zero3Spike {
    static final List<Pointer> KEEP = new ArrayList<>();

    /** A unit's layer, its values (what an all-gather would deliver) and the tensor it is gathered into. */
    record Unit(LinearImpl layer, Tensor values, Tensor gathered) {}

    public static void main(String[] a) {
        LibTorch.load();
        for (String way : List.of("set-data", "storage")) {
            torch.manual_seed(1);
            List<LinearImpl> layers = new ArrayList<>();
            for (int i = 0; i < 3; i++) layers.add(new LinearImpl(512, 512));
            Tensor x = torch.randn(32, 512);
            Tensor loss = forward(layers, x, null);
            loss.backward();
            List<Tensor> expected = new ArrayList<>();
            for (LinearImpl l : layers) expected.add(l.weight().grad().clone());
            long version = layers.get(1).weight()._version();
            for (LinearImpl l : layers) l.weight().grad().zero_();

            boolean storage = way.equals("storage");
            List<Unit> units = new ArrayList<>();
            for (LinearImpl l : layers) {
                Unit u = new Unit(l, l.weight().detach().clone(), l.weight().detach().clone());
                set(l, u.gathered());
                units.add(u);
            }
            long[] between = new long[3];
            int[] gathers = {0};
            Tensor loss3 = forward(layers, x, (i, out) -> {
                Unit u = units.get(i);
                free(u, storage);
                between[i] = storage ? u.gathered().storage().nbytes() : u.layer().weight().numel();
                VoidTensorHook h = new VoidTensorHook() {
                    @Override public void call(TensorBase grad) { gather(u, storage); gathers[0]++; }
                };
                KEEP.add(h);
                out.register_hook(h);
            });
            loss3.backward();
            int same = 0;
            for (int i = 0; i < 3; i++) same += torch.equal(layers.get(i).weight().grad(), expected.get(i)) ? 1 : 0;
            for (Unit u : units) free(u, storage);
            System.out.printf("%s: between forward and backward the weights hold %s %s; %d gathers in backward; "
                            + "loss equal %b; weight gradients bit-equal %d of 3; version %d -> %d; freed after: %d%n",
                    way, Arrays.toString(between), storage ? "storage bytes" : "elements", gathers[0],
                    torch.equal(loss, loss3), same, version, layers.get(1).weight()._version(),
                    storage ? units.get(0).gathered().storage().nbytes() : layers.get(0).weight().numel());
        }
    }

    interface After { void run(int i, Tensor out); }

    static Tensor forward(List<LinearImpl> layers, Tensor x, After after) {
        Tensor h = x;
        for (int i = 0; i < layers.size(); i++) {
            h = torch.tanh(layers.get(i).forward(h));
            if (after != null) after.run(i, h);
        }
        return h.mul(h).mean();
    }

    static void set(LinearImpl l, Tensor data) {
        try (NoGradGuard g = new NoGradGuard()) { l.weight().set_data(data); }
    }

    static void free(Unit u, boolean storage) {
        if (storage) u.gathered().storage().unsafeGetStorageImpl().reset();
        set(u.layer(), torch.empty(0));
    }

    static void gather(Unit u, boolean storage) {
        if (storage) {
            Storage s = u.gathered().storage();
            long n = u.values().numel() * 4;
            s.set_data_ptr_noswap(s.allocator()._allocate(n));
            s.set_nbytes(n);
            Pointer.memcpy(s.mutable_data(), u.values().data_ptr(), n);
            set(u.layer(), u.gathered());
        } else {
            set(u.layer(), u.values().clone());
        }
    }
}
