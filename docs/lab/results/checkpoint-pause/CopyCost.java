import dev.cohort.libtorch.LibTorch;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import java.util.Arrays;
public class CopyCost {
    public static void main(String[] a) {
        LibTorch.load();
        Tensor p = torch.randn(4096, 4096);
        Tensor m = torch.randn(4096, 4096);
        Tensor dp = torch.empty(4096, 4096), dm = torch.empty(4096, 4096);
        double[] clone = new double[9], copy = new double[9];
        for (int i = 0; i < 9; i++) {
            long t0 = System.nanoTime();
            Tensor c1 = p.clone(); Tensor c2 = m.clone();
            long t1 = System.nanoTime();
            dp.copy_(p); dm.copy_(m);
            long t2 = System.nanoTime();
            clone[i] = (t1 - t0) / 1e6; copy[i] = (t2 - t1) / 1e6;
            c1.close(); c2.close();
        }
        Arrays.sort(clone); Arrays.sort(copy);
        System.out.println("clone 128MB median " + clone[4] + " ms; copy_ into preallocated " + copy[4] + " ms");
    }
}
