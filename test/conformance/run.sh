#!/usr/bin/env bash
# Runs the Apache Iceberg REST Compatibility Kit (RESTCompatibilityKitSuite)
# against a running Iceberg REST catalog and prints the result; the last line
# is "conformance: N passed, N failed, N skipped". scripts/conformance.sh
# starts duckicelake and calls this; call it yourself for a catalog that
# already runs.
#
#   test/conformance/run.sh              the catalog at $RCK_URI
#   test/conformance/run.sh --reference  the kit against Iceberg's own reference
#                                        server inside the test JVM (a check of
#                                        this harness; needs root for a private
#                                        network namespace, as that server binds
#                                        every interface)
#
# Env:
#   RCK_URI          the catalog's base URL, without /v1 (http://127.0.0.1:8181)
#   RCK_WAREHOUSE    the warehouse to ask /v1/config for (default lake)
#   RCK_CREDENTIAL   OAuth2 client credentials "id:secret" (none: no auth)
#   RCK_VENDED       1 (default): ask for vended credentials
#                    (X-Iceberg-Access-Delegation), which the kit's commits
#                    need to write manifests to s3:// table locations
#   RCK_PROPERTIES   more catalog properties, "key=value" separated by spaces
#   RCK_TIMEOUT      give up on the kit after this long (default 20m)
#   RCK_INCLUDE      run only the kit tests whose method name matches this
#                    regular expression (e.g. 'createTableTransaction|testLoadTable')
#   RCK_WIRE=1       log request and response bodies too (the HTTP client's
#                    wire logger) into rck.log
#   MVN, JAVA        the commands (default mvn, $JAVA_HOME/bin/java or java)
# Capability flags the kit reads are in pom.xml (rck.*); override one with
# RCK_PROPERTIES="rck.supports-names-with-dot=true".
#
# Output in test/conformance/target/: reports/ (JUnit XML), rck.log (the
# kit's log: HTTP request and status lines, test marks), conformance-report.txt
# (every failing test with its exception and exchanges), conformance-summary.json.
#
# Exit status: 0 when the kit ran, whatever it found (--strict: 1 when a test
# failed); 3 when it could not run (no Maven or Java, artifacts not
# resolvable, no test executed).
set -uo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$here"

strict=0 reference=0
for a in "$@"; do
  case $a in
    --strict) strict=1 ;;
    --reference) reference=1 ;;
    -h | --help)
      sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "run.sh: unknown argument $a" >&2
      exit 64
      ;;
  esac
done

cannot() {
  echo "conformance: the kit could not run: $*" >&2
  exit 3
}

MVN=${MVN:-mvn}
if [[ -z ${JAVA:-} ]]; then
  if [[ -n ${JAVA_HOME:-} && -x $JAVA_HOME/bin/java ]]; then JAVA=$JAVA_HOME/bin/java; else JAVA=java; fi
fi
command -v "$MVN" >/dev/null || cannot "no Maven ($MVN); install it (Debian: apt-get install maven)"
command -v "$JAVA" >/dev/null || cannot "no Java ($JAVA); the kit needs Java 17+"

profile=() cpfile=target/classpath.txt
if ((reference)); then
  profile=(-Preference)
  cpfile=target/classpath-reference.txt
fi

# Maven resolves the kit and its runtime from Maven Central into ~/.m2 (once;
# later runs need no network), compiles TestMarks and writes the classpath.
mkdir -p target
echo "conformance: resolving the kit (Maven; log: $here/target/mvn.log)"
if ! "$MVN" -B -q "${profile[@]}" test-compile dependency:build-classpath \
  -Dmdep.outputFile="$cpfile" -Dmdep.includeScope=test >target/mvn.log 2>&1; then
  tail -n 30 target/mvn.log >&2
  cannot "Maven could not resolve or build test/conformance (log: $here/target/mvn.log)"
fi
[[ -s $cpfile ]] || cannot "Maven wrote no classpath to $cpfile"

rm -rf target/reports target/rck.log
props=("-Dorg.slf4j.simpleLogger.logFile=$here/target/rck.log")
if [[ ${RCK_WIRE:-0} == 1 ]]; then
  props+=(-Dorg.slf4j.simpleLogger.log.org.apache.hc.client5.http.wire=debug)
fi
if ((reference)); then
  # The reference catalog's own capabilities: the kit's defaults.
  props+=(-Drck.local=true)
else
  # The capability flags in the pom's <properties> (rck.*) become system
  # properties, where the kit reads them.
  while IFS= read -r kv; do
    [[ -n $kv ]] && props+=("-D$kv")
  done < <(sed -n 's#^ *<\(rck\.[a-z.-]*\)>\([^<]*\)</.*#\1=\2#p' pom.xml)
  [[ -n ${RCK_URI:-} ]] || cannot "RCK_URI is not set (the catalog's base URL, e.g. http://127.0.0.1:8181)"
  uri=${RCK_URI%/}
  props+=(
    -Drck.local=false
    "-Duri=$uri"
    "-Dwarehouse=${RCK_WAREHOUSE:-lake}"
    # A catalog that hangs fails the test at hand instead of the whole run.
    -Drest.client.connection-timeout-ms=10000
    -Drest.client.socket-timeout-ms=60000
  )
  if [[ -n ${RCK_CREDENTIAL:-} ]]; then
    props+=("-Doauth2-server-uri=$uri/v1/oauth/tokens")
  fi
  if [[ ${RCK_VENDED:-1} == 1 ]]; then
    props+=("-Dheader.X-Iceberg-Access-Delegation=vended-credentials")
  fi
fi
for kv in ${RCK_PROPERTIES:-}; do
  props+=("-D$kv")
done

cmd=("$JAVA" "${props[@]}" -cp "target/test-classes:$(cat "$cpfile")"
  org.junit.platform.console.ConsoleLauncher execute
  --disable-banner --disable-ansi-colors --details=summary
  --select-class org.apache.iceberg.rest.RESTCompatibilityKitSuite
  ${RCK_INCLUDE:+--include-methodname ".*(${RCK_INCLUDE}).*"}
  --reports-dir target/reports
  --config "rck.local=$( ((reference)) && echo true || echo false)")

echo "conformance: running RESTCompatibilityKitSuite against $( ((reference)) && echo "Iceberg's reference server" || echo "$RCK_URI") (console: $here/target/console.log)"
t0=$SECONDS
# The credential travels in the environment (CATALOG_CREDENTIAL becomes the
# catalog property "credential"), not in argv where ps shows it.
if ((reference)); then
  # Jetty binds every interface; a private network namespace has only
  # loopback, so nothing outside this machine's 127.0.0.1 can reach it.
  [[ $(id -u) == 0 ]] || cannot "--reference needs root (for unshare -n)"
  port=18181
  CATALOG_REST_PORT=$port timeout "${RCK_TIMEOUT:-20m}" unshare -n sh -c 'ip link set lo up && exec "$@"' sh "${cmd[@]}" \
    >target/console.log 2>&1
else
  envs=()
  [[ -n ${RCK_CREDENTIAL:-} ]] && envs+=("CATALOG_CREDENTIAL=$RCK_CREDENTIAL")
  env "${envs[@]}" timeout "${RCK_TIMEOUT:-20m}" "${cmd[@]}" >target/console.log 2>&1
fi
rc=$?
echo "conformance: the kit finished in $((SECONDS - t0))s (exit $rc)"
# ConsoleLauncher: 0 all passed, 1 some failed, 2 no test found; 124 = timeout.
case $rc in
  0 | 1) ;;
  124) cannot "the kit did not finish in ${RCK_TIMEOUT:-20m}" ;;
  *)
    tail -n 30 target/console.log >&2
    cannot "ConsoleLauncher exited $rc (console: $here/target/console.log)"
    ;;
esac

python3 report.py target/reports target/rck.log "$here/target"
prc=$?
((prc == 0)) || cannot "no test result in target/reports"
if ((strict)) && python3 -c 'import json,sys; sys.exit(1 if json.load(open("target/conformance-summary.json"))["failed"] else 0)'; then
  exit 0
elif ((strict)); then
  exit 1
fi
exit 0
