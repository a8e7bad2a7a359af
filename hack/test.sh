#!/usr/bin/env bash
# `npm test`: the unit tests, then the integration tests, with the heavy
# builds overlapped with them instead of run before them.
#
# On a cold machine the Go builds (kube-apiserver/etcd/kubectl and Tekton;
# helm; Tekton Results, Chains and the registry; kcp) take longer than the
# suite. They are started here in one background job, one after another at a
# lower CPU priority (nice), in the order the tests need them; the tests run
# at once. Every test that needs a component asks its install script for it
# (src/localenv/real/binaries.ts), and the scripts hold a lock per cache
# while they build, so a test that comes before its build is done waits for
# that build and nothing is built twice. Warm (everything cached), the
# background job finishes in about a second.
#
# The integration files run in an order that puts the ones needing the
# later builds last: plain control planes first (the control plane is built
# before Tekton, so they run while Tekton builds), then Tekton, then helm,
# then kcp, then the real node's tests, then the platform services. The
# real node's build (hack/node/install.sh: kubelet, kube-scheduler and
# kube-controller-manager in one go build from the apiserver's module, then
# Tekton's helper images) comes after kcp's, and only where a node can run
# (root, containerd): real-node.test.ts runs while the platform builds. The
# platform's build (the registry, Tekton Results, Chains: the longest) comes
# last because the files that wait for it are the shortest: what runs after
# the last build is done is what a cold run waits for. Each file's duration
# is printed by the test runner's spec reporter summary (docs/testing.md has
# the figures).
#
# Environment: TEST_FILES overrides the file list (space separated, e.g. to
# run one file the way CI does); NO_PREBUILD=1 skips the background builds.
#
# After the last group, the closed-world audit (docs/testing.md) replays the
# internal apiservers' audit logs (INTERNAL_SERVICES_AUDIT_DIR, set here) and
# fails the run on any PipelineRun of the controller that leaves the closed
# world, or when it checked none.
set -euo pipefail
cd "$(dirname "$0")/.."

log() { printf 'test.sh: %s\n' "$*" >&2; }
started=$(date +%s)
since() { echo "$(( $(date +%s) - started )) s"; }

npm run build --silent
# Node.js lines past their end of life still run the suite, with a warning (src/util/node-support.ts).
node -e 'import("./dist/src/util/node-support.js").then((m) => { const s = m.nodeSupport(process.version); if (s.warning) console.error(`test.sh: warning: ${s.warning}`); })' || true

builds_log=${TEST_BUILDS_LOG:-$(mktemp -t internal-services-builds.XXXXXX)}
bg=
if [ "${NO_PREBUILD:-}" != 1 ]; then
  # One after another: parallel Go builds on two cores only thrash.
  (
    node_build=
    # The real node's parts only where one can start (realNodeUnavailable in src/localenv/real/real-node.ts).
    if [ "$(id -u)" = 0 ] && command -v containerd >/dev/null && command -v buildah >/dev/null; then node_build="hack/node/install.sh"; fi
    for step in "hack/envtest/install.sh --no-tekton-binaries" "hack/envtest/install.sh" "hack/helm/install.sh" "hack/kcp/install.sh" ${node_build:+"$node_build"} "hack/platform/install.sh registry results chains"; do
      t0=$(date +%s)
      if nice -n 10 bash $step >/dev/null 2>>"$builds_log"; then
        printf 'test.sh: background build %s done in %s s\n' "$step" "$(( $(date +%s) - t0 ))" >>"$builds_log"
      else
        printf 'test.sh: background build %s FAILED after %s s (the tests that need it report it)\n' "$step" "$(( $(date +%s) - t0 ))" >>"$builds_log"
      fi
    done
  ) &
  bg=$!
  log "building the test components in the background (log: $builds_log)"
fi

# The integration files, in the order of the builds they need. node --test
# runs the files of one invocation in its own (alphabetical) order, so each
# group is an invocation of its own: the unit tests, then the files that
# start no Tekton (they need only the control plane's binaries, built before
# Tekton's, and run while Tekton builds), then Tekton's, then what needs
# Helm, then kcp, then the real node (Tekton's pods run for real), then the
# platform services.
no_tekton="bundle chaos cli-kinds envtest informer informer-fill manifests tekton-components"
late_helm="helm helm-remote"
late_kcp="kcp kcp-late-binding kcp-moves kcp-controller kcp-same-shard kcp-partitions kcp-approve-paths bench-smoke"
# The files that start the real node (one at a time): the demo (local)
# runs its pods on it where one can start (and needs kcp for --kcp); the
# last two need the platform's build too, so one by one they come after
# the platform's files (which wait for that build with longer timeouts).
late_node="real-node local"
late_node_platform="local-results real-node-platform"
late_platform="bundles-registry results chains"
is_late() { case " $no_tekton $late_helm $late_kcp $late_node $late_node_platform $late_platform " in *" $1 "*) return 0;; esac; return 1; }
early=()
for f in dist/test/integration/*.test.js; do
  is_late "$(basename "$f" .test.js)" || early+=("$f")
done
group() { for n in "$@"; do [ -f "dist/test/integration/$n.test.js" ] && printf '%s\n' "dist/test/integration/$n.test.js"; done; }

durations=$(mktemp -t internal-services-durations.XXXXXX)
export TEST_DURATIONS_FILE="$durations"
# Every internal apiserver started from here on writes the audit log the
# closed-world check replays after the last group (test/closed-world-audit.ts).
audit_dir=$(mktemp -d -t internal-services-audit.XXXXXX)
export INTERNAL_SERVICES_AUDIT_DIR="$audit_dir"
status=0
# The whole machine's busy CPU seconds (every core; /proc/stat without idle
# and iowait): each group's line says how busy the machine was while it ran
# (builds beside it included), which says whether files could share it.
hz=$(getconf CLK_TCK 2>/dev/null || echo 100)
busy() { awk -v hz="$hz" 'NR == 1 { print int(($2 + $3 + $4 + $7 + $8 + $9) / hz) }' /proc/stat 2>/dev/null || echo 0; }
groups_log=$(mktemp -t internal-services-groups.XXXXXX)
# run NAME JOBS FILE...: one node --test invocation, JOBS files at a time.
# Files start their own clusters on ports reserved across the machine
# (src/localenv/real/processes.ts), so they can share it; a file that
# alone keeps the machine about one core busy (2026-11-29) leaves the other
# to a second file.
run() {
  local name=$1 jobs=$2
  shift 2
  [ $# -gt 0 ] || return 0
  local t0 c0 rc=0
  t0=$(date +%s)
  c0=$(busy)
  node --test --test-concurrency="$jobs" --test-reporter=spec --test-reporter-destination=stdout \
    --test-reporter="$PWD/dist/test/reporters/file-durations.js" --test-reporter-destination=stderr "$@" || rc=1
  local wall=$(( $(date +%s) - t0 )) cpu=$(( $(busy) - c0 ))
  printf 'test.sh: group %s: %s file(s), %s at a time, %s s, the machine busy %s CPU-s (%s of %s cores)\n' "$name" "$#" "$jobs" "$wall" "$cpu" \
    "$(awk -v c="$cpu" -v w="$wall" 'BEGIN { printf "%.2f", (w > 0 ? c / w : 0) }')" "$(nproc)" >>"$groups_log"
  return $rc
}
# Files at a time in the integration groups (TEST_JOBS; 1 runs them one by
# one) once the background builds are done. While they run, one file at a
# time: on a cold machine a second file only starves the builds that the
# later groups wait for (measured 2026-11-29: with two files at a time from
# the start, Helm's build took 507 s instead of 218, kcp's 791 instead of
# 534, and the run ended later).
jobs_wanted=${TEST_JOBS:-2}
jobs_now() {
  if [ -n "$bg" ] && kill -0 "$bg" 2>/dev/null; then echo 1; else echo "$jobs_wanted"; fi
}
if [ -n "${TEST_FILES:-}" ]; then
  # shellcheck disable=SC2086
  run files 1 $TEST_FILES || status=1
else
  # The unit tests need no built component: they run while the first build
  # (kube-apiserver, etcd) does, one file at a time (some time their own
  # work). (One run would take the integration files first: node sorts
  # them by path.)
  run unit 1 dist/test/unit/*.test.js || status=1
  # shellcheck disable=SC2046
  run no-tekton "$(jobs_now)" $(group $no_tekton) || status=1
  run tekton "$(jobs_now)" "${early[@]}" || status=1
  # shellcheck disable=SC2046
  run helm-kcp "$(jobs_now)" $(group $late_helm $late_kcp) || status=1
  # The real node's files one at a time (one node per machine: its bridge,
  # cgroups and containerd), beside the platform's files that simulate pods.
  if [ "$(jobs_now)" -gt 1 ]; then
    # shellcheck disable=SC2046
    ( run node 1 $(group $late_node $late_node_platform) ) &
    node_lane=$!
    # shellcheck disable=SC2046
    run platform 1 $(group $late_platform) || status=1
    wait "$node_lane" || status=1
  else
    # shellcheck disable=SC2046
    run node 1 $(group $late_node) || status=1
    # The platform's build may have ended meanwhile (a cold run: measured
    # 2026-11-29, the last two groups then ran one file at a time on a
    # machine 1.1 cores busy): its files beside the real node's.
    if [ "$(jobs_now)" -gt 1 ]; then
      # shellcheck disable=SC2046
      ( run node-platform 1 $(group $late_node_platform) ) &
      node_lane=$!
      # shellcheck disable=SC2046
      run platform 1 $(group $late_platform) || status=1
      wait "$node_lane" || status=1
    else
      # shellcheck disable=SC2046
      run platform 1 $(group $late_platform $late_node_platform) || status=1
    fi
  fi
fi
node dist/test/reporters/print-durations.js "$durations" >&2 || true
rm -f "$durations"
cat "$groups_log" >&2
rm -f "$groups_log"

# The closed world over the whole run (issue 51): every PipelineRun the
# controller created, checked against what was installed then. On stderr, so
# that the test runner's closing lines stay the last of stdout. A run of
# chosen files may start no controller: checking nothing fails only the full
# suite.
allow_none=
[ -n "${TEST_FILES:-}" ] && allow_none=--allow-none
if node dist/test/closed-world-audit.js "$audit_dir" $allow_none >&2; then
  rm -rf "$audit_dir"
else
  status=1
  log "closed-world audit FAILED; its logs are kept in $audit_dir"
fi

if [ -n "$bg" ]; then
  wait "$bg" || true
  cat "$builds_log" | grep '^test.sh:' >&2 || true
fi
log "done in $(since), exit $status"
exit $status
