package dev.cohort.dist;

import static org.assertj.core.api.Assertions.assertThat;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import javax.xml.parsers.DocumentBuilderFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.w3c.dom.Document;
import org.w3c.dom.Element;
import org.w3c.dom.NodeList;

/** The BOM manages the DJL and JavaCPP versions Cohort is built against: the parent pom's. */
@Timeout(30)
class BomTest {

    private static final Path ROOT = Path.of("../..");

    private static Document read(String pom) throws Exception {
        return DocumentBuilderFactory.newInstance()
                .newDocumentBuilder()
                .parse(ROOT.resolve(pom).toFile());
    }

    private static String property(Document pom, String name) {
        NodeList found = ((Element) pom.getElementsByTagName("properties").item(0)).getElementsByTagName(name);
        return found.getLength() == 0 ? null : found.item(0).getTextContent().trim();
    }

    /** {@code groupId:artifactId[:classifier]=version} of each managed dependency, properties resolved. */
    private static List<String> managed(Document pom) {
        List<String> out = new ArrayList<>();
        NodeList deps =
                ((Element) pom.getElementsByTagName("dependencyManagement").item(0)).getElementsByTagName("dependency");
        for (int i = 0; i < deps.getLength(); i++) {
            Element d = (Element) deps.item(i);
            NodeList classifier = d.getElementsByTagName("classifier");
            String version = text(d, "version");
            for (String p : List.of(
                    "javacpp.version", "pytorch.version", "openblas.version", "djl.version", "djl.pytorch.version")) {
                version = version.replace("${" + p + "}", property(pom, p));
            }
            out.add(text(d, "groupId") + ":" + text(d, "artifactId")
                    + (classifier.getLength() == 0
                            ? ""
                            : ":" + classifier.item(0).getTextContent().trim()) + "=" + version);
        }
        return out;
    }

    private static String text(Element e, String tag) {
        return e.getElementsByTagName(tag).item(0).getTextContent().trim();
    }

    @Test
    void theBomManagesTheParentsDjlAndJavacppVersions() throws Exception {
        Document parent = read("pom.xml");
        Document bom = read("bom/pom.xml");
        for (String p : List.of(
                "javacpp.version", "pytorch.version", "openblas.version", "djl.version", "djl.pytorch.version")) {
            assertThat(property(bom, p)).as(p).isNotNull().isEqualTo(property(parent, p));
        }
        List<String> parentManaged = managed(parent).stream()
                .map(d -> d.replace("${javacpp.platform}", property(parent, "javacpp.platform")))
                .toList();
        List<String> native_ = parentManaged.stream()
                .filter(d -> d.startsWith("org.bytedeco:") || d.startsWith("ai.djl"))
                .toList();
        assertThat(native_).hasSizeGreaterThanOrEqualTo(10);
        assertThat(managed(bom)).containsAll(native_);
    }
}
