#!/usr/bin/env bash
# Build the incumbent Go controller (konflux-ci/internal-services) from a pinned
# commit of its mirrored source, for running handover tests against it by hand.
#
# Usage: hack/incumbent/build.sh            # prints the manager binary path on stdout
#
# Environment:
#   INCUMBENT_COMMIT        commit to build (any rev the source repo knows; resolved
#                           to a full sha). Default: the pinned sha below.
#   INCUMBENT_SRC           git dir (bare or not) holding the incumbent source.
#                           Default: /work/.mirror/konflux-ci+internal-services/repo
#   INTERNAL_SERVICES_CACHE cache root. Default: $HOME/.cache/internal-services
#   INCUMBENT_FORCE=1       rebuild even if the binary is already cached.
#
# Output: ${INTERNAL_SERVICES_CACHE}/incumbent/<full-sha>/manager
# All progress goes to stderr; only the binary path is written to stdout.
#
# Network: only the Go module proxy is reachable; the checksum database
# (sum.golang.org) is not. GOSUMDB=off is set for this build only: modules that
# are listed in the incumbent's go.sum are still verified against go.sum.
# If go.sum is incomplete the build is retried once with -mod=mod (which may add
# unverified go.sum entries inside the throwaway source copy only).
set -euo pipefail

# Pinned default: HEAD of the mirror when this script was written.
readonly DEFAULT_INCUMBENT_COMMIT=ac3f07f74fd0a4f63ffa356b1d6424e40c87546c

INCUMBENT_SRC="${INCUMBENT_SRC:-/work/.mirror/konflux-ci+internal-services/repo}"
INCUMBENT_COMMIT="${INCUMBENT_COMMIT:-$DEFAULT_INCUMBENT_COMMIT}"
CACHE_ROOT="${INTERNAL_SERVICES_CACHE:-$HOME/.cache/internal-services}"

log() { printf '[incumbent-build] %s\n' "$*" >&2; }

command -v go >/dev/null || { log "go not found on PATH"; exit 1; }
command -v git >/dev/null || { log "git not found on PATH"; exit 1; }

if ! git -C "$INCUMBENT_SRC" rev-parse --git-dir >/dev/null 2>&1; then
  log "INCUMBENT_SRC=$INCUMBENT_SRC is not a git directory"
  exit 1
fi

if ! full_sha="$(git -C "$INCUMBENT_SRC" rev-parse --verify --quiet "${INCUMBENT_COMMIT}^{commit}")"; then
  log "commit '$INCUMBENT_COMMIT' not found in $INCUMBENT_SRC"
  exit 1
fi

# INCUMBENT_VARIANT=unlimited-qps: the same source with its two Kubernetes
# clients' rate limits lifted (QPS -1: client-go then makes no rate limiter),
# for the benchmark's "limits lifted" column (bench/incumbent.ts). Patched in
# the throwaway copy only; cached under <sha>-unlimited-qps.
INCUMBENT_VARIANT="${INCUMBENT_VARIANT:-}"
case "$INCUMBENT_VARIANT" in
  ''|unlimited-qps) ;;
  *) log "unknown INCUMBENT_VARIANT '$INCUMBENT_VARIANT' (known: unlimited-qps)"; exit 1 ;;
esac
out_dir="$CACHE_ROOT/incumbent/$full_sha${INCUMBENT_VARIANT:+-$INCUMBENT_VARIANT}"
out_bin="$out_dir/manager"

if [[ -x "$out_bin" && "${INCUMBENT_FORCE:-0}" != 1 ]]; then
  log "already built: $out_bin"
  printf '%s\n' "$out_bin"
  exit 0
fi

mkdir -p "$out_dir"

# Serialise concurrent invocations for the same commit (flock is optional).
if command -v flock >/dev/null; then
  exec 9>"$out_dir/.build.lock"
  flock 9
  if [[ -x "$out_bin" && "${INCUMBENT_FORCE:-0}" != 1 ]]; then
    log "already built (by a concurrent run): $out_bin"
    printf '%s\n' "$out_bin"
    exit 0
  fi
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/incumbent-build.XXXXXX")"
cleanup() { chmod -R u+w "$work" 2>/dev/null || true; rm -rf "$work"; }
trap cleanup EXIT

log "extracting $full_sha from $INCUMBENT_SRC"
git -C "$INCUMBENT_SRC" archive --format=tar "$full_sha" | tar -x -C "$work/"

if [[ ! -f "$work/go.mod" || ! -f "$work/main.go" ]]; then
  log "commit $full_sha has no go.mod/main.go at its root; cannot build"
  exit 1
fi

if [[ "$INCUMBENT_VARIANT" == unlimited-qps ]]; then
  # Both places main.go makes a rest.Config: the internal cluster's
  # (ctrl.GetConfigOrDie) and the remote's (getRemoteClusterClientConfig).
  n1=$(grep -c 'ctrl.GetConfigOrDie()' "$work/main.go" || true)
  n2=$(grep -c 'return clientConfig.ClientConfig()' "$work/main.go" || true)
  if [[ "$n1" != 1 || "$n2" != 1 ]]; then
    log "unlimited-qps: main.go of $full_sha does not have the two places this patch expects ($n1, $n2); cannot build the variant"
    exit 1
  fi
  sed -i -e 's/ctrl\.GetConfigOrDie()/benchUnlimited(ctrl.GetConfigOrDie())/' \
    -e 's/return clientConfig\.ClientConfig()/return benchUnlimitedErr(clientConfig.ClientConfig())/' "$work/main.go"
  cat >"$work/zz_bench_unlimited.go" <<'GO'
package main

import "k8s.io/client-go/rest"

// Written by hack/incumbent/build.sh (INCUMBENT_VARIANT=unlimited-qps): no client rate limit.
func benchUnlimited(c *rest.Config) *rest.Config { c.QPS = -1; return c }

func benchUnlimitedErr(c *rest.Config, err error) (*rest.Config, error) {
	if c != nil {
		c.QPS = -1
	}
	return c, err
}
GO
  log "unlimited-qps: both clients' rate limits lifted (QPS -1)"
fi

# Same as the incumbent's Dockerfile (CGO_ENABLED=0, main package at repo root),
# without -a so the shared Go build cache is reused.
export CGO_ENABLED=0
export GOMAXPROCS=2
export GOSUMDB=off
export GONOSUMDB='*'
export GONOSUMCHECK=1
export GOFLAGS="${GOFLAGS:+$GOFLAGS }-buildvcs=false" GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-3GiB}

build() {
  local modflag="$1"
  (
    cd "$work"
    GOFLAGS="$GOFLAGS $modflag" nice -n 10 go build -p 2 -trimpath \
      -ldflags "-s -w" -o "$work/manager.out" .
  ) >&2
}

start=$SECONDS
log "building (go $(go env GOVERSION), GOPROXY=$(go env GOPROXY))"
if ! build -mod=readonly; then
  log "build with -mod=readonly failed; retrying with -mod=mod (go.sum may be incomplete)"
  build -mod=mod
fi

"$work/manager.out" --help >/dev/null 2>&1 || true  # smoke: binary executes
mv -f "$work/manager.out" "$out_bin.tmp"
mv -f "$out_bin.tmp" "$out_bin"
printf '%s\n' "$full_sha" >"$out_dir/COMMIT"
log "built $out_bin in $((SECONDS - start))s"
printf '%s\n' "$out_bin"
