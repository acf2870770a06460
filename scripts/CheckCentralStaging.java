import java.io.IOException;
import java.io.InputStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.MessageDigest;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.jar.JarFile;
import java.util.stream.Stream;
import javax.xml.parsers.DocumentBuilderFactory;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.Node;

/**
 * Checks a release staged in a Maven repository folder (mvn -Prelease deploy
 * -DaltDeploymentRepository=staging::file://DIR) against what Maven Central requires of a
 * deployment, so that a release fails here rather than at the Central Portal:
 *
 * <ul>
 *   <li>every pom, with what it inherits from a staged parent: groupId, artifactId, version (no
 *       SNAPSHOT), name, description, url, a license with name and url, a developer, scm url and
 *       connection; every dependency has a version, its own or managed (by a staged parent or an
 *       imported staged BOM); no SNAPSHOT anywhere;
 *   <li>every jar artifact: its -sources.jar and -javadoc.jar, an Automatic-Module-Name, and a
 *       CycloneDX SBOM (-cyclonedx.json);
 *   <li>every file: a signature (.asc, verified by scripts/check-release.sh with the key) and .md5 and
 *       .sha1 checksums that match it.
 * </ul>
 *
 * Run: java scripts/CheckCentralStaging.java DIR. Exits 1 listing every problem.
 */
public class CheckCentralStaging {

    private static final List<String> CHECKSUMS = List.of("md5", "sha1");
    private static final Set<String> SIDE_FILES = Set.of("asc", "md5", "sha1", "sha256", "sha512");

    private final Path root;
    private final List<String> problems = new ArrayList<>();
    /** Staged poms by groupId:artifactId:version. */
    private final Map<String, Element> poms = new HashMap<>();

    private CheckCentralStaging(Path root) {
        this.root = root;
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1 || !Files.isDirectory(Path.of(args[0]))) {
            System.err.println("usage: java scripts/CheckCentralStaging.java STAGING_DIR (a Maven repository folder)");
            System.exit(2);
        }
        CheckCentralStaging check = new CheckCentralStaging(Path.of(args[0]));
        int artifacts = check.run();
        if (!check.problems.isEmpty()) {
            check.problems.forEach(p -> System.err.println("central: " + p));
            System.err.println("central: " + check.problems.size() + " problem(s): Maven Central would refuse this release");
            System.exit(1);
        }
        System.out.println("central: " + artifacts + " artifact(s) staged as Maven Central requires");
    }

    private int run() throws Exception {
        List<Path> pomFiles;
        try (Stream<Path> files = Files.walk(root)) {
            pomFiles = files.filter(p -> p.toString().endsWith(".pom")).sorted().toList();
        }
        if (pomFiles.isEmpty()) {
            problems.add("no pom staged in " + root);
            return 0;
        }
        Map<Path, Element> parsed = new HashMap<>();
        for (Path pom : pomFiles) {
            Element project = parse(pom);
            parsed.put(pom, project);
            poms.put(text(coordinate(project, "groupId")) + ":" + text(child(project, "artifactId")) + ":"
                    + text(coordinate(project, "version")), project);
        }
        for (Path pom : pomFiles) {
            checkArtifact(pom, parsed.get(pom));
        }
        try (Stream<Path> files = Files.walk(root)) {
            for (Path f : files.filter(Files::isRegularFile).sorted().toList()) {
                checkSigned(f);
            }
        }
        return pomFiles.size();
    }

    private void checkArtifact(Path pomFile, Element project) throws Exception {
        String id = text(child(project, "artifactId"));
        String version = text(coordinate(project, "version"));
        String where = pomFile.getFileName().toString();
        if (text(coordinate(project, "groupId")).isEmpty() || id.isEmpty() || version.isEmpty()) {
            problems.add(where + ": groupId, artifactId and version are required");
        }
        if (Files.readString(pomFile).contains("SNAPSHOT")) {
            problems.add(where + ": names a SNAPSHOT version (Central takes releases only)");
        }
        for (String required : List.of("name", "description", "url")) {
            if (inherited(project, required) == null) {
                problems.add(where + ": no <" + required + "> (its own or a staged parent's)");
            }
        }
        Element license = child(inherited(project, "licenses"), "license");
        if (license == null || text(child(license, "name")).isEmpty() || text(child(license, "url")).isEmpty()) {
            problems.add(where + ": no <license> with a name and a url");
        }
        Element developer = child(inherited(project, "developers"), "developer");
        if (developer == null || text(child(developer, "name")).isEmpty()) {
            problems.add(where + ": no <developer> with a name");
        }
        Element scm = inherited(project, "scm");
        if (scm == null || text(child(scm, "url")).isEmpty() || text(child(scm, "connection")).isEmpty()) {
            problems.add(where + ": no <scm> with a url and a connection");
        }
        checkDependencyVersions(project, where);
        String packaging = text(child(project, "packaging"));
        if (packaging.isEmpty() || packaging.equals("jar")) {
            Path dir = pomFile.getParent();
            String base = id + "-" + version;
            for (String suffix : List.of(".jar", "-sources.jar", "-javadoc.jar", "-cyclonedx.json")) {
                if (!Files.isRegularFile(dir.resolve(base + suffix))) {
                    problems.add(where + ": no " + base + suffix + " beside it");
                }
            }
            Path jar = dir.resolve(base + ".jar");
            if (Files.isRegularFile(jar)) {
                try (JarFile j = new JarFile(jar.toFile())) {
                    if (j.getManifest() == null
                            || j.getManifest().getMainAttributes().getValue("Automatic-Module-Name") == null) {
                        problems.add(base + ".jar: no Automatic-Module-Name in its manifest");
                    }
                }
            }
            Path sbom = dir.resolve(base + "-cyclonedx.json");
            if (Files.isRegularFile(sbom) && !Files.readString(sbom).contains("\"bomFormat\" : \"CycloneDX\"")) {
                problems.add(sbom.getFileName() + ": not a CycloneDX SBOM");
            }
        }
    }

    /** Every dependency of {@code project} has a version: its own, or managed by a staged parent or BOM. */
    private void checkDependencyVersions(Element project, String where) {
        Set<String> managed = new HashSet<>();
        for (Element p = project; p != null; p = parent(p)) {
            for (Element d : dependencies(child(p, "dependencyManagement"))) {
                managed.add(text(child(d, "groupId")) + ":" + text(child(d, "artifactId")));
                if (text(child(d, "scope")).equals("import")) {
                    Element bom = poms.get(text(child(d, "groupId")) + ":" + text(child(d, "artifactId")) + ":"
                            + resolve(p, text(child(d, "version"))));
                    if (bom != null) {
                        for (Element m : dependencies(child(bom, "dependencyManagement"))) {
                            managed.add(text(child(m, "groupId")) + ":" + text(child(m, "artifactId")));
                        }
                    }
                }
            }
        }
        for (Element d : dependencies(project)) {
            String ga = text(child(d, "groupId")) + ":" + text(child(d, "artifactId"));
            if (text(child(d, "version")).isEmpty() && !managed.contains(ga)) {
                problems.add(where + ": dependency " + ga + " has no version, its own or managed");
            }
        }
    }

    /** {@code ${project.version}} and the like, from the pom and its staged parents; others as they are. */
    private String resolve(Element project, String value) {
        if (value.equals("${project.version}")) {
            return text(coordinate(project, "version"));
        }
        return value;
    }

    private void checkSigned(Path file) throws Exception {
        String name = file.getFileName().toString();
        String extension = name.substring(name.lastIndexOf('.') + 1);
        if (SIDE_FILES.contains(extension) || name.startsWith("maven-metadata")) {
            return;
        }
        String where = root.relativize(file).toString();
        if (!Files.isRegularFile(file.resolveSibling(name + ".asc"))) {
            problems.add(where + ": no signature (.asc)");
        }
        for (String algorithm : CHECKSUMS) {
            Path sum = file.resolveSibling(name + "." + algorithm);
            if (!Files.isRegularFile(sum)) {
                problems.add(where + ": no ." + algorithm + " checksum");
            } else if (!Files.readString(sum).trim().startsWith(digest(file, algorithm))) {
                problems.add(where + ": its ." + algorithm + " checksum does not match the file");
            }
        }
    }

    private static String digest(Path file, String algorithm) throws Exception {
        MessageDigest md = MessageDigest.getInstance(algorithm.equals("sha1") ? "SHA-1" : "MD5");
        try (InputStream in = Files.newInputStream(file)) {
            byte[] buffer = new byte[1 << 16];
            for (int n; (n = in.read(buffer)) > 0; ) {
                md.update(buffer, 0, n);
            }
        }
        return HexFormat.of().formatHex(md.digest());
    }

    // ---- the pom as XML

    private static Element parse(Path pom) throws IOException {
        try {
            Document d = DocumentBuilderFactory.newInstance().newDocumentBuilder().parse(pom.toFile());
            return d.getDocumentElement();
        } catch (Exception e) {
            throw new IOException(pom + " is not a readable pom: " + e.getMessage(), e);
        }
    }

    /** The staged parent of {@code project}, or null. */
    private Element parent(Element project) {
        Element p = child(project, "parent");
        if (p == null) {
            return null;
        }
        return poms.get(text(child(p, "groupId")) + ":" + text(child(p, "artifactId")) + ":"
                + text(child(p, "version")));
    }

    /** {@code name} of the project or, where it has none, its staged parents'. */
    private Element inherited(Element project, String name) {
        for (Element p = project; p != null; p = parent(p)) {
            Element e = child(p, name);
            if (e != null) {
                return e;
            }
        }
        return null;
    }

    /** groupId or version: the project's own, else its {@code <parent>}'s. */
    private static Element coordinate(Element project, String name) {
        Element own = child(project, name);
        return own != null ? own : child(child(project, "parent"), name);
    }

    private static List<Element> dependencies(Element owner) {
        List<Element> found = new ArrayList<>();
        Element list = child(owner, "dependencies");
        if (list != null) {
            for (Node n = list.getFirstChild(); n != null; n = n.getNextSibling()) {
                if (n instanceof Element e && e.getTagName().equals("dependency")) {
                    found.add(e);
                }
            }
        }
        return found;
    }

    private static Element child(Element parent, String name) {
        if (parent == null) {
            return null;
        }
        for (Node n = parent.getFirstChild(); n != null; n = n.getNextSibling()) {
            if (n instanceof Element e && e.getTagName().equals(name)) {
                return e;
            }
        }
        return null;
    }

    private static String text(Element e) {
        return e == null ? "" : e.getTextContent().trim();
    }
}
