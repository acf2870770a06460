#!/usr/bin/env bash
# Cohort as a new user meets it, after `mvn -B install` of this checkout (./cohort test runs this):
#  1. examples/quickstart builds offline against the installed artifacts (the BOM, the modules by
#     coordinates); a DJL project on cohort-djl + cohort-hier resolves no JavaCPP libtorch, and
#     cohort-launcher alone no engine;
#  2. the distribution archive unpacks elsewhere and its bin/cohort works through a symlink on PATH;
#     its lib/ (the workers' class path) holds no SLF4J binding and no DJL (those are lib/tools/);
#  3. `cohort run -cp quickstart.jar --nproc-per-node 2 -- com.example.Train` trains on two workers,
#     printing no JVM warning, and so does a fat jar of it with Cohort inside (services merged);
#  4. `./cohort demo` (2 workers, 5 epochs) reaches the README's test accuracy (>= 0.88), prints no
#     JVM warning and writes its chart beside its summary;
#  5. the README's launcher line runs the README's training program on two processes, as written.
# JAVA_HOME: the JDK to use (./cohort sets it). Exits non-zero naming the step that failed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
: "${JAVA_HOME:?set JAVA_HOME (./cohort test does)}"
version=$(sed -n 's|^  <version>\(.*\)</version>|\1|p' "$ROOT/pom.xml" | head -n 1)
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "check-quickstart: $*" >&2; exit 1; }
no_warnings() {   # $1: the output file, $2: what produced it
  if grep -n '^\(\[rank [0-9]*\] \)\?WARNING' "$1" >&2; then fail "$2 printed the JVM warnings above"; fi
}

# Maven itself on JDK >= 24 warns about sun.misc.Unsafe unless told otherwise: not ours to show.
feature=$("$JAVA_HOME/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')
[ "${feature%%.*}" -ge 24 ] && export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"

echo "check-quickstart: 1. building examples/quickstart offline against Cohort $version in ~/.m2"
cp -r "$ROOT/examples/quickstart" "$work/quickstart"
(cd "$work/quickstart" && mvn -B -q -o -Dstyle.color=never package -Dcohort.version="$version" 2>&1 | sed 's/\x1b\[0m//g') \
  || fail "the quickstart did not build offline"
jar="$work/quickstart/target/quickstart-1.0.jar"
[ -f "$jar" ] || fail "no $jar"

echo "check-quickstart: 1b. what a project gets from Cohort's libraries (mvn dependency:tree)"
tree() {   # $1: a name, $2...: artifact ids of dev.cohort; prints the resolved tree into $work/$1.txt
  local name=$1; shift
  mkdir -p "$work/$name"
  { echo '<project xmlns="http://maven.apache.org/POM/4.0.0"><modelVersion>4.0.0</modelVersion>'
    echo "<groupId>com.example</groupId><artifactId>$name</artifactId><version>1.0</version>"
    echo "<dependencyManagement><dependencies><dependency><groupId>dev.cohort</groupId><artifactId>cohort-bom</artifactId>"
    echo "<version>$version</version><type>pom</type><scope>import</scope></dependency></dependencies></dependencyManagement><dependencies>"
    for a in "$@"; do echo "<dependency><groupId>dev.cohort</groupId><artifactId>$a</artifactId></dependency>"; done
    echo '</dependencies></project>'; } > "$work/$name/pom.xml"
  (cd "$work/$name" && mvn -B -q -Dstyle.color=never org.apache.maven.plugins:maven-dependency-plugin:3.8.1:tree \
    -DoutputFile="$work/$name.txt" 2>&1 | sed 's/\x1b\[0m//g') || fail "the dependencies of $* did not resolve"
}
tree djl-on-hier cohort-djl cohort-hier
! grep -n 'org.bytedeco\|cohort-gloo' "$work/djl-on-hier.txt" >&2 \
  || fail "a DJL project on cohort-djl and cohort-hier would get JavaCPP's libtorch (above), beside DJL's own"
tree launcher-api cohort-launcher
! grep -n 'cohort-\(gloo\|tcp\|shm\|hier\|mpi\)' "$work/launcher-api.txt" >&2 \
  || fail "cohort-launcher brings an engine (above): a program using its Java API names its own"

echo "check-quickstart: 2. unpacking the distribution elsewhere"
archive="$ROOT/tools/dist/target/cohort-$version.tar.gz"
[ -f "$archive" ] || fail "no $archive (mvn -B install builds it)"
mkdir -p "$work/opt" "$work/bin" "$work/run"
tar xzf "$archive" -C "$work/opt"
ln -s "$work/opt/cohort-$version/bin/cohort" "$work/bin/cohort"
export PATH="$work/bin:$PATH"
cd "$work/run"
cohort --version | tee "$work/version.txt"
grep -q "^cohort $version" "$work/version.txt" || fail "cohort --version does not say $version"
clash=$(cd "$work/opt/cohort-$version/lib" && ls -- *.jar | grep -E '^(slf4j-|logback-|log4j-|api-[0-9]|pytorch-(engine|jni|native))' || true)
[ -z "$clash" ] || fail "the workers' lib/ holds an SLF4J binding or DJL, which a program's own would clash with: $clash"

echo "check-quickstart: 3. cohort run -cp quickstart.jar --nproc-per-node 2 -- com.example.Train"
timeout 300 cohort run -cp "$jar" --nproc-per-node 2 --master-port 0 -- com.example.Train > "$work/run.txt" 2>&1 \
  || { cat "$work/run.txt" >&2; fail "the quickstart run failed"; }
cat "$work/run.txt"
grep -q '^\[rank 0\] epoch 5: loss [0-9.]* (2 workers on ' "$work/run.txt" || fail "the quickstart did not train on 2 workers"
no_warnings "$work/run.txt" "cohort run"
! grep -n 'SLF4J' "$work/run.txt" >&2 || fail "cohort run printed SLF4J's warnings above"

echo "check-quickstart: 3b. a fat jar of the quickstart with Cohort inside: cohort run -- quickstart-1.0-all.jar"
(cd "$work/quickstart" && mvn -B -q -Dstyle.color=never package -Pfat -Dcohort.version="$version" 2>&1 | sed 's/\x1b\[0m//g') \
  || fail "the quickstart's fat jar did not build"
timeout 300 cohort run --nproc-per-node 2 --master-port 0 -- "$work/quickstart/target/quickstart-1.0-all.jar" > "$work/fat.txt" 2>&1 \
  || { cat "$work/fat.txt" >&2; fail "the fat jar's run failed"; }
grep -q '^\[rank 0\] epoch 5: loss [0-9.]* (2 workers on ' "$work/fat.txt" || { cat "$work/fat.txt" >&2; fail "the fat jar did not train on 2 workers"; }
grep '^\[rank 0\] epoch 5' "$work/fat.txt"
no_warnings "$work/fat.txt" "cohort run -- the fat jar"

echo "check-quickstart: 4. ./cohort demo (2 workers, 5 epochs)"
timeout 600 "$ROOT/cohort" demo --json "$work/demo/summary.json" > "$work/demo.txt" 2>&1 \
  || { cat "$work/demo.txt" >&2; fail "the demo failed"; }
tail -n 5 "$work/demo.txt"
no_warnings "$work/demo.txt" "./cohort demo"
[ -s "$work/demo/summary.json" ] || fail "the demo wrote no summary"
accuracy=$(sed -n 's/.*"test_accuracy" *: *\([0-9.]*\).*/\1/p' "$work/demo/summary.json" | head -n 1)
awk -v a="${accuracy:-0}" 'BEGIN { exit !(a >= 0.88) }' \
  || fail "the demo's test accuracy is ${accuracy:-missing}; the README promises about 0.89 (>= 0.88)"
echo "check-quickstart: the demo's test accuracy: $accuracy"
[ -s "$work/demo/summary.png" ] || fail "the demo wrote no chart beside its summary (summary.png)"
echo "check-quickstart: 5. the README's training program on Gloo, as the README runs it"
readme_line=$(grep -m 1 '^    ./cohort run -cp runtime/target/test-classes ' "$ROOT/README.md") || fail "the README's launcher line is gone"
(cd "$ROOT" && timeout 300 bash -c "${readme_line# *}") > "$work/readme.txt" 2>&1 \
  || { cat "$work/readme.txt" >&2; fail "the README's launcher line failed: $readme_line"; }
grep -q '^\[rank 0\] 2 workers, mean loss 0.750' "$work/readme.txt" || { cat "$work/readme.txt" >&2; fail "the README's program did not run on 2 workers"; }
no_warnings "$work/readme.txt" "the README's launcher line"
echo "check-quickstart: all steps passed"
