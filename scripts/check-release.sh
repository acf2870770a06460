#!/usr/bin/env bash
# A release as Maven Central takes it, after `mvn -B install` of this checkout (./cohort test runs this):
#  1. a throwaway signing key (made here, in a temporary GnuPG home; never the maintainer's);
#  2. `mvn -Prelease deploy` of the pure-Java modules into a local staging folder: jars, sources,
#     Javadoc, CycloneDX SBOMs, signatures and checksums, as a Central Portal bundle holds them
#     (CHECK_RELEASE_MODULES=all stages every deployed module; it takes minutes);
#  3. scripts/CheckCentralStaging.java checks the folder against Central's rules, every signature is
#     verified with the key, and the checker must refuse a copy with one signature removed;
#  4. the staged jars, built again (forced), are byte for byte those `mvn install` put in ~/.m2.
# JAVA_HOME: the JDK to use (./cohort sets it). Exits non-zero naming the step that failed.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
: "${JAVA_HOME:?set JAVA_HOME (./cohort test does)}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
fail() { echo "check-release: $*" >&2; exit 1; }
command -v gpg >/dev/null || fail "gpg is not installed (apt-get install -y gnupg)"

echo "check-release: 1. a throwaway signing key"
export GNUPGHOME="$work/gnupg"
mkdir -m 700 "$GNUPGHOME"
gpg --batch --quiet --pinentry-mode loopback --passphrase '' \
  --quick-gen-key 'Cohort release check <release-check@cohort.invalid>' ed25519 sign 1d
MAVEN_GPG_KEY="$(gpg --batch --armor --export-secret-keys)"
export MAVEN_GPG_KEY

modules="${CHECK_RELEASE_MODULES:-.,bom,api,runtime,cli,engines/tcp,tools/launcher}"
[ "$modules" = all ] && modules=""
echo "check-release: 2. mvn -Prelease deploy into a staging folder (${modules:-every module})"
feature=$("$JAVA_HOME/bin/java" -XshowSettings:properties -version 2>&1 | sed -n 's/^ *java\.specification\.version = //p')
[ "${feature%%.*}" -ge 24 ] && export MAVEN_OPTS="${MAVEN_OPTS:-} --sun-misc-unsafe-memory-access=allow"
(cd "$ROOT" && mvn -B -q -Dstyle.color=never -Prelease -DskipTests -Dmaven.jar.forceCreation=true ${modules:+-pl "$modules"} deploy \
  -DaltDeploymentRepository="staging::file://$work/staging" 2>&1 | sed 's/\x1b\[0m//g') \
  || fail "the release profile did not stage"

echo "check-release: 3. the staged release against Central's rules"
"$JAVA_HOME/bin/java" "$ROOT/scripts/CheckCentralStaging.java" "$work/staging" || fail "the staged release breaks Central's rules"
signatures=0
while IFS= read -r asc; do
  gpg --batch --quiet --verify "$asc" "${asc%.asc}" 2>/dev/null || fail "bad signature: ${asc#"$work/staging/"}"
  signatures=$((signatures + 1))
done < <(find "$work/staging" -name '*.asc')
echo "check-release: $signatures signatures verified"
cp -r "$work/staging" "$work/unsigned"
rm "$(find "$work/unsigned" -name '*.jar.asc' | head -n 1)"
if "$JAVA_HOME/bin/java" "$ROOT/scripts/CheckCentralStaging.java" "$work/unsigned" >/dev/null 2>&1; then
  fail "the checker took a release with a signature missing"
fi

echo "check-release: 4. two builds of this commit give the same jars (project.build.outputTimestamp)"
repo="${MAVEN_REPO:-$HOME/.m2/repository}"
compared=0
while IFS= read -r jar; do
  installed="$repo/${jar#"$work/staging/"}"
  [ -f "$installed" ] || continue
  cmp -s "$jar" "$installed" || fail "${jar##*/} differs from the one mvn install built: the build is not reproducible"
  compared=$((compared + 1))
done < <(find "$work/staging" -name '*.jar' ! -name '*-javadoc.jar')
[ "$compared" -gt 0 ] || fail "no staged jar to compare with $repo (run mvn -B install first)"
echo "check-release: $compared jars identical to mvn install's"
echo "check-release: passed"
