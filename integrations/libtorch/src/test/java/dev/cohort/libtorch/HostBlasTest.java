package dev.cohort.libtorch;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assumptions.assumeTrue;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.TimeUnit;
import org.bytedeco.pytorch.Tensor;
import org.bytedeco.pytorch.global.torch;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

@Timeout(value = 120, unit = TimeUnit.SECONDS)
class HostBlasTest {

    /** The JDK's own libraries: real ELF files, where libnio.so calls JNU_* functions that libjava.so defines. */
    private static final Path JDK = Path.of(System.getProperty("java.home"), "lib");

    @TempDir
    Path dir;

    @Test
    void bundledKeepsTheBundledLibraryAndAutoPrefersTheHostsWhereThereIsOne() throws IOException {
        Path usual = Files.createDirectories(dir.resolve("usual"));
        assertEquals(HostBlas.Choice.BUNDLED, HostBlas.choose(null, null, List.of(usual)));
        assertEquals(HostBlas.Choice.BUNDLED, HostBlas.choose("auto", dir.toString(), List.of(usual)));
        Path lib = Files.writeString(usual.resolve(HostBlas.SONAME), "");
        assertEquals(new HostBlas.Choice(lib, false), HostBlas.choose(null, null, List.of(usual)));
        assertEquals(new HostBlas.Choice(lib, false), HostBlas.choose(" ", null, List.of(usual)));
        assertEquals(new HostBlas.Choice(lib, false), HostBlas.choose("auto", null, List.of(usual)));
        assertEquals(HostBlas.Choice.BUNDLED, HostBlas.choose("bundled", "/x", List.of(usual)));
    }

    @Test
    void systemTakesTheFirstLibraryOnTheLibraryPathThenTheUsualFolders() throws IOException {
        Path first = Files.createDirectories(dir.resolve("first"));
        Path usual = Files.createDirectories(dir.resolve("usual"));
        Files.writeString(usual.resolve(HostBlas.SONAME), "");
        assertEquals(
                new HostBlas.Choice(usual.resolve(HostBlas.SONAME), true),
                HostBlas.choose("system", first + "::" + dir.resolve("missing"), List.of(usual)));
        Files.writeString(first.resolve(HostBlas.SONAME), "");
        assertEquals(
                new HostBlas.Choice(first.resolve(HostBlas.SONAME), true),
                HostBlas.choose("system", first.toString(), List.of(usual)));
    }

    @Test
    void systemWithoutALibrarySaysWhereItLookedAndWhatToDo() {
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> HostBlas.choose("system", dir.toString(), List.of(dir.resolve("usual"))));
        assertTrue(e.getMessage().startsWith("COHORT_BLAS=system: no libopenblas.so.0 in ["), e.getMessage());
        assertTrue(
                e.getMessage().contains(dir.resolve("usual").toString())
                        && e.getMessage().contains("unset COHORT_BLAS"),
                e.getMessage());
    }

    @Test
    void aPathMustBeAbsoluteAndExist() throws IOException {
        for (String bad : List.of(
                "openblas",
                "relative/libopenblas.so.0",
                dir.resolve("absent.so").toString())) {
            IllegalArgumentException e =
                    assertThrows(IllegalArgumentException.class, () -> HostBlas.choose(bad, null, List.of()));
            assertTrue(
                    e.getMessage()
                            .startsWith("COHORT_BLAS=" + bad + ": expected auto, bundled, system or the absolute path"),
                    e.getMessage());
        }
        Path lib = Files.writeString(dir.resolve("libopenblas.so.0"), "");
        assertEquals(new HostBlas.Choice(lib, true), HostBlas.choose(lib.toString(), null, List.of()));
    }

    @Test
    void readsWhatALibraryDefinesAndWhatItNeeds() throws IOException {
        Set<String> defined = ElfSymbols.of(JDK.resolve("libjava.so"), true);
        Set<String> needed = ElfSymbols.of(JDK.resolve("libnio.so"), false);
        assertTrue(defined.contains("JNU_ThrowByName"), "libjava.so defines JNU_ThrowByName");
        assertTrue(
                needed.contains("JNU_ThrowByName") || needed.contains("JNU_ThrowIOExceptionWithLastError"),
                String.valueOf(needed));
        assertTrue(!ElfSymbols.of(JDK.resolve("libjava.so"), false).contains("JNU_ThrowByName"));
    }

    @Test
    void aFileThatIsNotElfIsRefusedByName() throws IOException {
        Path text = Files.writeString(
                dir.resolve("libopenblas.so.0"), "not a library, but long enough to hold a header.........");
        IOException e = assertThrows(IOException.class, () -> ElfSymbols.of(text, true));
        assertTrue(e.getMessage().contains(text.toString()), e.getMessage());
    }

    @Test
    void aCandidateMustDefineEveryFunctionTakenFromTheBundledLibrary() throws IOException {
        // libnio.so stands for libtorch, libjava.so for the bundled OpenBLAS: libnet.so lacks the JNU_* functions.
        HostBlas.checkProvides(JDK.resolve("libjava.so"), JDK.resolve("libnio.so"), JDK.resolve("libjava.so"));
        IllegalArgumentException e = assertThrows(
                IllegalArgumentException.class,
                () -> HostBlas.checkProvides(
                        JDK.resolve("libnet.so"), JDK.resolve("libnio.so"), JDK.resolve("libjava.so")));
        assertTrue(
                e.getMessage()
                        .matches("COHORT_BLAS: .*libnet\\.so lacks \\d+ function\\(s\\) libtorch calls, e\\.g\\. JNU_.*"
                                + "use a full OpenBLAS build with LAPACK, or unset COHORT_BLAS to use the bundled one"),
                e.getMessage());
    }

    @Test
    void autoPassesOverAHostLibraryThatLacksAFunctionWhereANamedOneIsRefused() throws IOException {
        // As above: libnio.so stands for libtorch, libjava.so for the bundled OpenBLAS.
        Path torch = JDK.resolve("libnio.so");
        Path bundled = JDK.resolve("libjava.so");
        Path lacking = JDK.resolve("libnet.so");
        assertEquals(Optional.empty(), HostBlas.usable(new HostBlas.Choice(lacking, false), torch, bundled));
        assertEquals(Optional.of(bundled), HostBlas.usable(new HostBlas.Choice(bundled, false), torch, bundled));
        assertEquals(Optional.empty(), HostBlas.usable(HostBlas.Choice.BUNDLED, torch, bundled));
        assertThrows(
                IllegalArgumentException.class,
                () -> HostBlas.usable(new HostBlas.Choice(lacking, true), torch, bundled));
        Path notElf =
                Files.writeString(dir.resolve("libopenblas.so.0"), "not a library, but long enough for a header..");
        assertEquals(Optional.empty(), HostBlas.usable(new HostBlas.Choice(notElf, false), torch, bundled));
    }

    /**
     * The real thing, where the host has OpenBLAS (CI installs libopenblas0-pthread): by default
     * ({@code auto}) libtorch computes with it.
     */
    @Test
    void byDefaultLibtorchComputesWithTheHostsOpenBlas() {
        assumeTrue(
                HostBlas.usualFolders().stream().anyMatch(d -> Files.isRegularFile(d.resolve(HostBlas.SONAME))),
                "no OpenBLAS installed on this host");
        System.setProperty(HostBlas.PROPERTY, "auto");
        try {
            LibTorch.load();
        } finally {
            System.clearProperty(HostBlas.PROPERTY);
        }
        assertTrue(LibTorch.blas().startsWith("host OpenBLAS /"), LibTorch.blas());
        String mapped = LibTorch.blas().substring("host OpenBLAS ".length());
        assertTrue(mappedHere(mapped), mapped + " is mapped into this process");
        Tensor a = torch.randn(64, 96);
        Tensor b = torch.randn(96, 32);
        Tensor product = a.matmul(b); // BLAS: sgemm
        Tensor expected = a.unsqueeze(2).mul(b.unsqueeze(0)).sum(new long[] {1}); // no BLAS
        assertTrue(product.allclose(expected, 1e-4, 1e-4, false), "matmul on the host's OpenBLAS");
        Tensor m = torch.randn(8, 8).add(torch.eye(8).mul(new org.bytedeco.pytorch.Scalar(8.0)));
        Tensor identity = m.matmul(torch.inverse(m)); // LAPACK: getrf, getri
        assertTrue(identity.allclose(torch.eye(8), 1e-4, 1e-4, false), "inverse on the host's OpenBLAS");
    }

    private static boolean mappedHere(String library) {
        try {
            return Files.readAllLines(Path.of("/proc/self/maps")).stream().anyMatch(l -> l.endsWith(library));
        } catch (IOException e) {
            return false;
        }
    }
}
