#!/usr/bin/env bash
# Makes the platform services' binaries available and prints, as one JSON line
# on stdout, where they are: {"results-api": PATH, "results-watcher": PATH,
# "chains-controller": PATH, "registry": PATH} for the components asked for
# (arguments: results, chains, registry; none: all three). Progress goes to
# stderr.
#
# Looked for in this order:
#   1. $PLATFORM_ASSETS, a directory holding the binaries under those names;
#   2. the per-version cache:
#      ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}/platform/
#      results-<version>-chains-<version>/ and registry-<version>/;
#   3. built here with the machine's Go toolchain from the wrapper modules
#      beside this script (versions.env), into that cache: Results and Chains
#      from one module (hack/platform/tekton) in one go build, the registry
#      from its own.
# Only the tests and modes that need a component call this for it; a cold
# build takes minutes per component on 2 cores (registry v3.1.2 ~70 s idle;
# measured 2026-11-26 with load 8-12 from other builds, modules already
# downloaded: results v0.20.0 api 336 s + watcher 56 s, chains v0.28.1 536 s).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

log() { printf 'platform: %s\n' "$*" >&2; }
cache_root=${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}
components=("$@")
[ ${#components[@]} -gt 0 ] || components=(results chains registry)

declare -A path=()

build() { # MODULE CACHE-KEY "name=pkg"...: the missing binaries of one wrapper module, in one go build
  local module=$1 key=$2; shift 2
  local dir="$cache_root/platform/$key" spec name pkgs=() names=()
  for spec in "$@"; do
    name=${spec%%=*}
    if [ -n "${PLATFORM_ASSETS:-}" ] && [ -x "$PLATFORM_ASSETS/$name" ]; then
      path[$name]="$(cd "$PLATFORM_ASSETS" && pwd)/$name"; continue
    fi
    path[$name]="$dir/$name"
    names+=("$name"); pkgs+=("${spec#*=}")
  done
  [ ${#names[@]} -gt 0 ] || return 0
  local missing=0
  for name in "${names[@]}"; do [ -x "$dir/$name" ] || missing=1; done
  [ $missing = 1 ] || return 0
  mkdir -p "$dir"
  if command -v flock >/dev/null; then exec 9>"$dir/.lock"; flock 9; fi
  missing=0
  for name in "${names[@]}"; do [ -x "$dir/$name" ] || missing=1; done
  if [ $missing = 1 ]; then
    command -v go >/dev/null || { log "Go is needed to build ${names[*]} (nothing cached in $dir); or set PLATFORM_ASSETS"; exit 1; }
    export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-3GiB}
    export GONOSUMDB=${GONOSUMDB:-github.com,gocloud.dev,k8s.io,sigs.k8s.io,knative.dev,go.opentelemetry.io,google.golang.org,cloud.google.com,golang.org}
    log "building ${names[*]} ($key) from hack/platform/$module (first run only; minutes)"
    local started; started=$(date +%s)
    rm -rf "$dir/bin.tmp"
    mkdir -p "$dir/bin.tmp"
    # -gcflags: the services' code and dependencies compiled without
    # optimisation (-N -l), the standard library as in every install script
    # (std=-dwarf=false: shared through the Go build cache). These modules
    # share no other package with the harness's builds (their Tekton and
    # Kubernetes libraries are other versions), and the tests give the
    # services little work: measured on helm's cold build the same way, -26%
    # of CPU (hack/helm/install.sh); the registry's -19% (2026-11-29).
    (cd "$here/$module" && go build -trimpath "-gcflags=all=-dwarf=false -N -l" -gcflags=std=-dwarf=false -ldflags "-s -w" -o "$dir/bin.tmp/" "${pkgs[@]}")
    for i in "${!names[@]}"; do
      mv -f "$dir/bin.tmp/$(basename "${pkgs[$i]}")" "$dir/${names[$i]}"
    done
    rm -rf "$dir/bin.tmp"
    log "built ${names[*]} into $dir in $(( $(date +%s) - started )) s"
  fi
  if command -v flock >/dev/null; then exec 9>&-; fi
}

# Results and Chains come from one module (hack/platform/tekton) and are built
# together, whichever of the two was asked for: the second would cost little
# more than linking, and the cache key names both versions.
want_tekton=0
for c in "${components[@]}"; do
  case $c in
    results|chains) want_tekton=1 ;;
    registry) ;;
    *) log "unknown component $c (results, chains, registry)"; exit 2 ;;
  esac
done
tekton_specs=(
  "results-api=github.com/tektoncd/results/cmd/api"
  "results-watcher=github.com/tektoncd/results/cmd/watcher"
  "chains-controller=github.com/tektoncd/chains/cmd/controller"
)
if [ $want_tekton = 1 ]; then build tekton "results-$RESULTS_VERSION-chains-$CHAINS_VERSION" "${tekton_specs[@]}"; fi
json=""
for c in "${components[@]}"; do
  case $c in
    results) names="results-api results-watcher" ;;
    chains) names="chains-controller" ;;
    registry) build registry "registry-$REGISTRY_VERSION" "registry=github.com/distribution/distribution/v3/cmd/registry"; names="registry" ;;
  esac
  for n in $names; do json="${json:+$json,}\"$n\":\"${path[$n]}\""; done
done
printf '{%s}\n' "$json"
