import dev.cohort.api.DivergenceCheck;
import dev.cohort.api.collective.DataType;
import dev.cohort.api.collective.DenseBuffer;
/** The cost of one divergence-check fingerprint pass over the bench MLP's 1.86 M float32 parameters. */
public class FingerprintCost {
    public static void main(String[] a) {
        int[] sizes = {784 * 1024, 1024, 1024 * 1024, 1024, 1024 * 10, 10};
        DenseBuffer[] params = new DenseBuffer[sizes.length];
        for (int i = 0; i < sizes.length; i++) {
            params[i] = DenseBuffer.allocateDirect(DataType.FLOAT32, sizes[i]);
            for (int k = 0; k < sizes[i]; k++) params[i].setDouble(k, Math.sin(k));
        }
        long sink = 0;
        double[] ms = new double[30];
        for (int r = 0; r < 200 + ms.length; r++) {
            long t = System.nanoTime();
            for (DenseBuffer p : params) sink += DivergenceCheck.fingerprint(p);
            if (r >= 200) ms[r - 200] = (System.nanoTime() - t) / 1e6;
        }
        java.util.Arrays.sort(ms);
        System.out.printf("fingerprints of 1.86 M float32 parameters: median %.2f ms (min %.2f, max %.2f) [%d]%n", ms[ms.length / 2], ms[0], ms[ms.length - 1], sink & 1);
    }
}
