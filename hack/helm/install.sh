#!/usr/bin/env bash
# Makes a helm binary available and prints its absolute path as the last line
# of stdout (progress goes to stderr). Idempotent: builds at most once per
# version and machine.
#
# Looked for in this order:
#   1. $HELM_BINARY, if set (any helm v3 you trust; no version check beyond "v3");
#   2. the per-version cache:
#      ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}/helm/<HELM_VERSION>/helm;
#   3. built here with the machine's Go toolchain from the Go module
#      helm.sh/helm/v3 at HELM_VERSION (hack/helm/version.env), into that cache.
#      Cold (empty Go module and build caches) that is ~3.7 min of CPU time:
#      measured 10 min wall on 2 cores busy with other builds. Debian
#      (bookworm) has no helm package.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=version.env
. "$here/version.env"

log() { printf 'helm: %s\n' "$*" >&2; }

if [ -n "${HELM_BINARY:-}" ]; then
  [ -x "$HELM_BINARY" ] || { log "HELM_BINARY=$HELM_BINARY is not an executable file"; exit 1; }
  v=$("$HELM_BINARY" version --short 2>/dev/null) || { log "HELM_BINARY=$HELM_BINARY does not run ('helm version' failed)"; exit 1; }
  case "$v" in v3.*) ;; *) log "HELM_BINARY=$HELM_BINARY reports version '$v'; the chart needs helm v3"; exit 1 ;; esac
  log "using $HELM_BINARY ($v) from HELM_BINARY"
  printf '%s\n' "$(cd "$(dirname "$HELM_BINARY")" && pwd)/$(basename "$HELM_BINARY")"
  exit 0
fi

cache_root=${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}
dir="$cache_root/helm/$HELM_VERSION"
bin="$dir/helm"

if [ ! -x "$bin" ]; then
  # One build at a time per cache (two test runs starting together wait for
  # the first build, then find its binary).
  mkdir -p "$dir"
  if command -v flock >/dev/null; then
    exec 9>"$dir/.lock"
    flock 9
  fi
fi
if [ ! -x "$bin" ]; then
  command -v go >/dev/null || { log "Go is needed to build helm $HELM_VERSION (nothing cached at $bin); or set HELM_BINARY"; exit 1; }
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-3GiB}
  module=helm.sh/helm/v3
  log "building helm $HELM_VERSION from the Go module $module (first run only; a few minutes)"
  started=$(date +%s)
  # The Kubernetes version helm assumes when no cluster is asked
  # (.Capabilities.KubeVersion in `helm template`, lint's deprecation checks):
  # the one of the client-go it is built with, as helm's own Makefile sets it.
  gomod=$(go mod download -json "$module@$HELM_VERSION" | sed -n 's/.*"GoMod": "\(.*\)".*/\1/p')
  [ -f "$gomod" ] || { log "cannot download $module@$HELM_VERSION from the Go module proxy"; exit 1; }
  cg=$(sed -n 's/^[[:space:]]*k8s\.io\/client-go v0\.\([0-9]*\)\..*/\1/p' "$gomod" | head -n1)
  ldflags="-s -w -X $module/internal/version.version=$HELM_VERSION -X $module/internal/version.gitTreeState=clean"
  if [ -n "$cg" ]; then
    for pkg in pkg/chartutil pkg/lint/rules; do
      ldflags="$ldflags -X $module/$pkg.k8sVersionMajor=1 -X $module/$pkg.k8sVersionMinor=$cg"
    done
  fi
  rm -rf "$dir.tmp"
  mkdir -p "$dir.tmp"
  # -gcflags: helm's own code and its dependencies compiled without
  # optimisation (-N -l), the standard library as in every install script
  # (std=-dwarf=false: shared through the Go build cache). helm shares no
  # other package with the harness's builds (its Kubernetes libraries are
  # newer), and the tests run it for a fraction of a second at a time:
  # measured cold on 2 cores (2026-11-29), 306 s of CPU optimised and 226 s
  # without (-26%); `helm template` and `helm lint` ~10% slower.
  # go install with an explicit version builds the module as released (its
  # own go.mod and go.sum), whatever module the current directory is in.
  (cd "$dir.tmp" && GOBIN="$dir.tmp" go install -trimpath "-gcflags=all=-dwarf=false -N -l" -gcflags=std=-dwarf=false -ldflags "$ldflags" "$module/cmd/helm@$HELM_VERSION")
  "$dir.tmp/helm" version --short >/dev/null || { log "the helm just built does not run"; exit 1; }
  mv -f "$dir.tmp/helm" "$bin"
  rmdir "$dir.tmp" 2>/dev/null || true
  log "built $bin in $(( $(date +%s) - started )) s"
fi

printf '%s\n' "$bin"
