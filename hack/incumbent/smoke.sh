#!/usr/bin/env bash
# Hand-run smoke test of the incumbent Go controller (see README.md here).
#
# Starts one etcd and two throwaway kube-apiservers on loopback ("remote" and
# "internal", separate etcd prefixes), installs the incumbent's CRDs (from its
# source at INCUMBENT_COMMIT) on both and Tekton's PipelineRun CRD on
# "internal", creates the InternalServicesConfig, runs the manager built by
# build.sh until "Starting workers", and then (unless SMOKE_FLOW=0) drives a
# few requests through it with no Tekton controller: PipelineRun status is
# written by hand.
#
# Environment:
#   INCUMBENT_BIN     manager binary (default: the output of build.sh)
#   ENVTEST_BIN       dir holding etcd, kube-apiserver, kubectl
#                     (default: newest ~/.cache/internal-services/envtest/*/bin)
#   TEKTON_CRDS       dir holding 300-pipelinerun.yaml
#                     (default: newest ~/.cache/internal-services/tekton/*/config/300-crds)
#   SMOKE_FLOW=0      only check that the manager starts
#   SMOKE_KEEP=1      keep the work dir (logs, kubeconfigs) and print its path
#   SMOKE_HOLD=1      after the checks, keep clusters and manager running until
#                     SIGINT/SIGTERM to this script; writes $work/env with
#                     REMOTE_KUBECONFIG, INTERNAL_KUBECONFIG, SERVICE_NAMESPACE, ...
# Everything runs on 127.0.0.1; all processes started here are stopped on exit.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cache="${INTERNAL_SERVICES_CACHE:-$HOME/.cache/internal-services}"
INCUMBENT_SRC="${INCUMBENT_SRC:-/work/.mirror/konflux-ci+internal-services/repo}"

log() { printf '[incumbent-smoke] %s\n' "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

INCUMBENT_BIN="${INCUMBENT_BIN:-$("$here/build.sh")}"
commit="$(basename "$(dirname "$INCUMBENT_BIN")")"
if ! git -C "$INCUMBENT_SRC" rev-parse --verify --quiet "${commit}^{commit}" >/dev/null; then
  commit="${INCUMBENT_COMMIT:-$(sed -n 's/^readonly DEFAULT_INCUMBENT_COMMIT=//p' "$here/build.sh")}"
fi
ENVTEST_BIN="${ENVTEST_BIN:-$(ls -d "$cache"/envtest/*/bin 2>/dev/null | sort -V | tail -1)}"
TEKTON_CRDS="${TEKTON_CRDS:-$(ls -d "$cache"/tekton/*/config/300-crds 2>/dev/null | sort -V | tail -1)}"
for f in "$ENVTEST_BIN/etcd" "$ENVTEST_BIN/kube-apiserver" "$ENVTEST_BIN/kubectl" "$TEKTON_CRDS/300-pipelinerun.yaml" "$INCUMBENT_BIN"; do
  [[ -e "$f" ]] || die "missing $f"
done

work="$(mktemp -d "${TMPDIR:-/tmp}/incumbent-smoke.XXXXXX")"
pids=()
stop_pid() { # TERM, up to 10s grace, then KILL; one process, by its pid
  local p=$1
  kill "$p" 2>/dev/null || return 0
  for ((j = 0; j < 50; j++)); do kill -0 "$p" 2>/dev/null || break; sleep 0.2; done
  kill -9 "$p" 2>/dev/null || true
  wait "$p" 2>/dev/null || true
}
holding=0
cleanup() {
  local rc=$?
  [[ $holding == 1 ]] && rc=0 # stopped by a signal while holding: not a failure
  # Newest first (manager, apiservers, then etcd), each one gone before the next:
  # an apiserver whose etcd is already gone can hang in graceful shutdown.
  for ((i = ${#pids[@]} - 1; i >= 0; i--)); do stop_pid "${pids[i]}"; done
  if [[ "${SMOKE_KEEP:-0}" == 1 || $rc -ne 0 ]]; then log "work dir kept: $work"; else rm -rf "$work"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_for() { # wait_for <seconds> <description> <command...>
  local t=$1 what=$2; shift 2
  for ((i = 0; i < t * 5; i++)); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "timed out after ${t}s waiting for: $what"
}

etcd_port=$(free_port); peer_port=$(free_port)
"$ENVTEST_BIN/etcd" --name=smoke --data-dir="$work/etcd" \
  --listen-client-urls="http://127.0.0.1:$etcd_port" --advertise-client-urls="http://127.0.0.1:$etcd_port" \
  --listen-peer-urls="http://127.0.0.1:$peer_port" --initial-advertise-peer-urls="http://127.0.0.1:$peer_port" \
  --initial-cluster="smoke=http://127.0.0.1:$peer_port" --unsafe-no-fsync --log-level=warn \
  >"$work/etcd.log" 2>&1 &
pids+=($!)

openssl genrsa -out "$work/sa.key" 2048 2>/dev/null
openssl rsa -in "$work/sa.key" -pubout -out "$work/sa.pub" 2>/dev/null
token="$(openssl rand -hex 24)"
printf '%s,admin,admin,"system:masters"\n' "$token" >"$work/tokens.csv"

declare -A port
for name in remote internal; do
  port[$name]=$(free_port)
  mkdir -p "$work/$name"
  "$ENVTEST_BIN/kube-apiserver" --etcd-servers="http://127.0.0.1:$etcd_port" --etcd-prefix="/$name" \
    --cert-dir="$work/$name/certs" --secure-port="${port[$name]}" --bind-address=127.0.0.1 \
    --advertise-address=127.0.0.1 --service-cluster-ip-range=10.0.0.0/24 --authorization-mode=RBAC \
    --token-auth-file="$work/tokens.csv" --disable-admission-plugins=ServiceAccount \
    --service-account-issuer="https://127.0.0.1:${port[$name]}/" --service-account-key-file="$work/sa.pub" \
    --service-account-signing-key-file="$work/sa.key" --profiling=false \
    >"$work/$name/apiserver.log" 2>&1 &
  pids+=($!)
done
for name in remote internal; do
  wait_for 90 "$name apiserver /readyz" curl -skf -H "Authorization: Bearer $token" "https://127.0.0.1:${port[$name]}/readyz"
  cat >"$work/$name.kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters: [{name: $name, cluster: {server: "https://127.0.0.1:${port[$name]}", certificate-authority-data: $(base64 -w0 "$work/$name/certs/apiserver.crt")}}]
users: [{name: admin, user: {token: "$token"}}]
contexts: [{name: $name, context: {cluster: $name, user: admin}}]
current-context: $name
EOF
done
log "apiservers ready: remote https://127.0.0.1:${port[remote]}, internal https://127.0.0.1:${port[internal]}"
kr() { "$ENVTEST_BIN/kubectl" --kubeconfig "$work/remote.kubeconfig" "$@"; }
ki() { "$ENVTEST_BIN/kubectl" --kubeconfig "$work/internal.kubeconfig" "$@"; }

# CRDs: the incumbent's own (both clusters), Tekton PipelineRun (internal; no conversion webhook here).
mkdir -p "$work/crds"
git -C "$INCUMBENT_SRC" archive "$commit" config/crd/bases | tar -x -C "$work/crds"
for k in kr ki; do $k create -f "$work/crds/config/crd/bases" >/dev/null; done
ki create -f "$TEKTON_CRDS/300-pipelinerun.yaml" >/dev/null
ki patch crd pipelineruns.tekton.dev --type=merge -p '{"spec":{"conversion":{"strategy":"None","webhook":null}}}' >/dev/null
for k in kr ki; do $k wait --for=condition=Established crd --all --timeout=60s >/dev/null; done

svc_ns=internal-services
ki create namespace "$svc_ns" >/dev/null
kr create namespace tenant >/dev/null
kr create namespace stranger >/dev/null
ki apply -f - >/dev/null <<EOF
apiVersion: appstudio.redhat.com/v1alpha1
kind: InternalServicesConfig
metadata: {name: config, namespace: $svc_ns}
spec:
  allowList: [tenant]
EOF

health_port=$(free_port); metrics_port=$(free_port)
log "starting $INCUMBENT_BIN (commit $commit)"
SERVICE_NAMESPACE="$svc_ns" "$INCUMBENT_BIN" \
  --kubeconfig="$work/internal.kubeconfig" \
  --remote-cluster-config-file="$work/remote.kubeconfig" \
  --metrics-bind-address="127.0.0.1:$metrics_port" \
  --health-probe-bind-address="127.0.0.1:$health_port" \
  --leader-elect=false \
  >"$work/manager.log" 2>&1 &
mgr=$!
pids+=($mgr)
started=$SECONDS
for ((i = 0; i < 600; i++)); do
  grep -q 'Starting workers' "$work/manager.log" && break
  kill -0 "$mgr" 2>/dev/null || { tail -30 "$work/manager.log" >&2; die "manager exited"; }
  sleep 0.2
done
grep -q 'Starting workers' "$work/manager.log" || { tail -30 "$work/manager.log" >&2; die "no 'Starting workers' within 120s"; }
log "manager reached 'Starting workers' after $((SECONDS - started))s"
wait_for 30 "healthz" curl -sf "http://127.0.0.1:$health_port/healthz"
wait_for 30 "readyz" curl -sf "http://127.0.0.1:$health_port/readyz"
log "healthz/readyz OK on 127.0.0.1:$health_port"

hold() {
  [[ "${SMOKE_HOLD:-0}" == 1 ]] || return 0
  {
    echo "REMOTE_KUBECONFIG=$work/remote.kubeconfig"
    echo "INTERNAL_KUBECONFIG=$work/internal.kubeconfig"
    echo "SERVICE_NAMESPACE=$svc_ns"
    echo "KUBECTL=$ENVTEST_BIN/kubectl"
    echo "MANAGER_PID=$mgr"
    echo "MANAGER_LOG=$work/manager.log"
    echo "HEALTH_ADDR=127.0.0.1:$health_port"
    echo "METRICS_ADDR=127.0.0.1:$metrics_port"
  } >"$work/env"
  log "holding; environment in $work/env; stop with: kill $$"
  holding=1
  sleep infinity &
  pids+=($!)
  wait $!
}

if [[ "${SMOKE_FLOW:-1}" == 0 ]]; then log "PASS (start only)"; hold; exit 0; fi

ir() { # ir <namespace> <name>
  kr apply -f - >/dev/null <<EOF
apiVersion: appstudio.redhat.com/v1alpha1
kind: InternalRequest
metadata: {name: $2, namespace: $1, labels: {from-request: "yes"}}
spec:
  pipeline:
    pipelineRef:
      resolver: cluster
      params: [{name: name, value: my-pipeline}]
  params: {foo: bar}
  serviceAccount: release-sa
EOF
}
reason() { kr get internalrequest -n "$1" "$2" -o jsonpath='{.status.conditions[?(@.type=="Succeeded")].reason}'; }
has_reason() { [[ "$(reason "$1" "$2")" == "$3" ]]; }
pr_of() { ki get pipelineruns -n "$svc_ns" -l "internal-services.appstudio.openshift.io/name=$1,internal-services.appstudio.openshift.io/namespace=$2" -o name; }
has_pr() { [[ -n "$(pr_of "$1" "$2")" ]]; }
no_pr() { [[ -z "$(pr_of "$1" "$2")" ]]; }

# 1. Rejected: namespace not in allowList.
ir stranger r1
wait_for 30 "stranger/r1 Rejected" has_reason stranger r1 Rejected
log "stranger/r1: $(kr get internalrequest -n stranger r1 -o jsonpath='{.status.conditions[0].status}/{.status.conditions[0].reason}: {.status.conditions[0].message}')"

# 2. Succeeds: PipelineRun created in $svc_ns, IR Running, then success written by hand.
ir tenant ok
wait_for 30 "tenant/ok PipelineRun" has_pr ok tenant
wait_for 30 "tenant/ok Running" has_reason tenant ok Running
pr="$(pr_of ok tenant)"
ki get "$pr" -n "$svc_ns" -o yaml >"$work/pipelinerun-ok.yaml"
kr get internalrequest -n tenant ok -o yaml >"$work/ir-ok-running.yaml"
log "tenant/ok Running; $pr (yaml in $work/pipelinerun-ok.yaml)"
now="$(date -u +%Y-%m-%dT%H:%M:%SZ)"
ki patch "$pr" -n "$svc_ns" --subresource=status --type=merge -p "{\"status\":{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"True\",\"reason\":\"Succeeded\",\"message\":\"done\",\"lastTransitionTime\":\"$now\"}],\"results\":[{\"name\":\"out\",\"value\":\"42\"},{\"name\":\"arr\",\"value\":[\"a\"]}]}}" >/dev/null
wait_for 30 "tenant/ok Succeeded" has_reason tenant ok Succeeded
kr get internalrequest -n tenant ok -o yaml >"$work/ir-ok-succeeded.yaml"
log "tenant/ok: $(kr get internalrequest -n tenant ok -o jsonpath='results={.status.results} pipelineRun={.status.pipelineRun}')"
wait_for 30 "tenant/ok PipelineRun deleted (debug=false)" no_pr ok tenant

# 3. Fails.
ir tenant bad
wait_for 30 "tenant/bad PipelineRun" has_pr bad tenant
pr="$(pr_of bad tenant)"
ki patch "$pr" -n "$svc_ns" --subresource=status --type=merge -p "{\"status\":{\"conditions\":[{\"type\":\"Succeeded\",\"status\":\"False\",\"reason\":\"Failed\",\"message\":\"boom\",\"lastTransitionTime\":\"$now\"}]}}" >/dev/null
wait_for 30 "tenant/bad Failed" has_reason tenant bad Failed
log "tenant/bad: $(kr get internalrequest -n tenant bad -o jsonpath='{.status.conditions[0].status}/{.status.conditions[0].reason}: {.status.conditions[0].message}')"

# 4. Deleted while running: PipelineRun cancelled, finalizer removed.
ir tenant gone
wait_for 30 "tenant/gone PipelineRun" has_pr gone tenant
wait_for 30 "tenant/gone Running" has_reason tenant gone Running
pr="$(pr_of gone tenant)"
kr delete internalrequest -n tenant gone --wait=true --timeout=30s >/dev/null
log "tenant/gone deleted; its run: spec.status=$(ki get "$pr" -n "$svc_ns" -o jsonpath='{.spec.status}')"
[[ "$(ki get "$pr" -n "$svc_ns" -o jsonpath='{.spec.status}')" == Cancelled ]] || die "run of deleted request not cancelled"

log "PASS (logs and yaml under $work are kept only with SMOKE_KEEP=1)"
hold
