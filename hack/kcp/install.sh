#!/usr/bin/env bash
# Makes the kcp binaries available and prints, as one JSON line on stdout, where
# they are: {"kcpBinary": PATH, "kcpBinDir": DIR, "kcpVersion": VERSION}.
# Progress goes to stderr. DIR holds kcp, kcp-front-proxy and cache-server
# (what a sharded kcp runs: src/localenv/real/kcp-sharded.ts).
#
# Looked for in this order:
#   1. $KCP_ASSETS, if it holds all three executables (any build you trust; it
#      should be KCP_VERSION, but no check is made beyond "it runs");
#   2. the per-version cache:
#      ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}/kcp/<KCP_VERSION>/bin/kcp;
#   3. built here with the machine's Go toolchain from the wrapper module
#      beside this script (github.com/kcp-dev/kcp at KCP_VERSION, version.env),
#      into that cache. v0.30.0 with its modules downloaded and the Go build
#      cache cold: 324 s wall on 2 cores, ~540 s of CPU, for the three
#      commands in one build (v0.28.1 cold: 14 s of module downloads, then
#      8 min 48 s wall on busy cores). Warm: nothing to do (a few ms). A cache that
#      holds only `kcp` (from before the sharded commands) gets the rest.
# Only what needs kcp runs this (npm test, test/integration/kcp.test.ts
# through src/localenv/real/kcp-server.ts); nothing else builds or starts kcp.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=version.env
. "$here/version.env"

log() { printf 'kcp: %s\n' "$*" >&2; }
emit() { printf '{"kcpBinary":"%s/kcp","kcpBinDir":"%s","kcpVersion":"%s"}\n' "$1" "$1" "$KCP_VERSION"; }
commands="kcp kcp-front-proxy cache-server"
# complete DIR: every command is there and executable
complete() { for c in $commands; do [ -x "$1/$c" ] || return 1; done; }

if [ -n "${KCP_ASSETS:-}" ]; then
  if complete "$KCP_ASSETS"; then
    log "using $KCP_ASSETS from KCP_ASSETS"
    emit "$(cd "$KCP_ASSETS" && pwd)"
    exit 0
  fi
  log "KCP_ASSETS=$KCP_ASSETS does not hold all of: $commands; looking in the cache"
fi

cache_root=${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}
dir="$cache_root/kcp/$KCP_VERSION"
bin="$dir/bin/kcp"

if ! complete "$dir/bin"; then
  # One build at a time per cache: a second run started meanwhile waits for
  # the first, then finds its binary.
  mkdir -p "$dir"
  if command -v flock >/dev/null; then
    exec 9>"$dir/.lock"
    flock 9
  fi
fi
if ! complete "$dir/bin"; then
  command -v go >/dev/null || { log "Go is needed to build kcp $KCP_VERSION (nothing cached at $bin); or set KCP_ASSETS"; exit 1; }
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-3GiB}
  # go.sum is committed; the checksum database is not consulted for the
  # modules it does not reach (kcp's fork of Kubernetes among them).
  export GONOSUMDB=${GONOSUMDB:-github.com/kcp-dev,k8s.io,sigs.k8s.io}
  log "building kcp $KCP_VERSION from its Go module (first run only; several minutes)"
  started=$(date +%s)
  # What `kcp --version` reports, as kcp's Makefile sets it: the Kubernetes
  # version of its fork, then +kcp-<release>.
  kube=$(sed -n 's#^\s*k8s.io/kubernetes \(v[0-9][^ ]*\).*#\1#p' "$here/go.mod" | head -n1)
  kmajor=${kube#v}; kmajor=${kmajor%%.*}
  kminor=${kube#v*.}; kminor=${kminor%%.*}
  ldflags="-s -w"
  for pkg in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
    ldflags="$ldflags -X $pkg.gitVersion=${kube}+kcp-${KCP_VERSION} -X $pkg.gitMajor=${kmajor} -X $pkg.gitMinor=${kminor} -X $pkg.gitTreeState=clean"
  done
  (cd "$here" && go mod download)
  log "modules downloaded after $(( $(date +%s) - started )) s"
  rm -rf "$dir/bin.tmp"
  mkdir -p "$dir/bin.tmp"
  pkgs=""
  for c in $commands; do pkgs="$pkgs github.com/kcp-dev/kcp/cmd/$c"; done
  # -gcflags=all=-dwarf=false: as in hack/envtest/install.sh (same flags
  # everywhere, so that shared packages come from the Go build cache).
  # One go build for the three: they share almost every package.
  # shellcheck disable=SC2086
  (cd "$here" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "$ldflags" -o "$dir/bin.tmp/" $pkgs)
  "$dir/bin.tmp/kcp" --version >/dev/null 2>&1 || "$dir/bin.tmp/kcp" --help >/dev/null 2>&1 || { log "the kcp just built does not run"; exit 1; }
  mkdir -p "$dir/bin"
  for c in $commands; do mv -f "$dir/bin.tmp/$c" "$dir/bin/$c"; done
  rmdir "$dir/bin.tmp" 2>/dev/null || true
  log "built $bin in $(( $(date +%s) - started )) s"
fi

emit "$dir/bin"
