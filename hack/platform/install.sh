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
#      ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}/platform/<component>-<version>/;
#   3. built here with the machine's Go toolchain from the wrapper modules
#      beside this script (versions.env), into that cache.
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

json=""
add() { json="${json:+$json,}\"$1\":\"$2\""; }

build() { # COMPONENT VERSION "name=pkg"...
  local component=$1 version=$2; shift 2
  local dir="$cache_root/platform/$component-$version" missing=0 spec name
  for spec in "$@"; do
    name=${spec%%=*}
    if [ -n "${PLATFORM_ASSETS:-}" ] && [ -x "$PLATFORM_ASSETS/$name" ]; then continue; fi
    [ -x "$dir/$name" ] || missing=1
  done
  if [ $missing = 1 ]; then
    mkdir -p "$dir"
    if command -v flock >/dev/null; then exec 9>"$dir/.lock"; flock 9; fi
  fi
  for spec in "$@"; do
    name=${spec%%=*}
    local pkg=${spec#*=}
    if [ -n "${PLATFORM_ASSETS:-}" ] && [ -x "$PLATFORM_ASSETS/$name" ]; then
      add "$name" "$(cd "$PLATFORM_ASSETS" && pwd)/$name"; continue
    fi
    if [ ! -x "$dir/$name" ]; then
      command -v go >/dev/null || { log "Go is needed to build $name $version (nothing cached in $dir); or set PLATFORM_ASSETS"; exit 1; }
      export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
      export GONOSUMDB=${GONOSUMDB:-github.com,gocloud.dev,k8s.io,sigs.k8s.io,knative.dev,go.opentelemetry.io,google.golang.org,cloud.google.com,golang.org}
      log "building $name ($component $version) from its Go module (first run only; a minute or two)"
      local started; started=$(date +%s)
      # -gcflags=all=-dwarf=false: as in hack/envtest/install.sh (same flags
      # everywhere, so that shared packages come from the Go build cache).
      (cd "$here/$component" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$dir/$name.tmp" "$pkg")
      mv -f "$dir/$name.tmp" "$dir/$name"
      log "built $dir/$name in $(( $(date +%s) - started )) s"
    fi
    add "$name" "$dir/$name"
  done
  if [ $missing = 1 ] && command -v flock >/dev/null; then exec 9>&-; fi
}

for c in "${components[@]}"; do
  case $c in
    results) build results "$RESULTS_VERSION" \
      "results-api=github.com/tektoncd/results/cmd/api" \
      "results-watcher=github.com/tektoncd/results/cmd/watcher" ;;
    chains) build chains "$CHAINS_VERSION" "chains-controller=github.com/tektoncd/chains/cmd/controller" ;;
    registry) build registry "$REGISTRY_VERSION" "registry=github.com/distribution/distribution/v3/cmd/registry" ;;
    *) log "unknown component $c (results, chains, registry)"; exit 2 ;;
  esac
done
printf '{%s}\n' "$json"
