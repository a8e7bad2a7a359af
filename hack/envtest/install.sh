#!/usr/bin/env bash
# Makes the test control plane's binaries available and prints, as one JSON
# line, where they are: kube-apiserver, etcd, kubectl; Tekton's controller,
# resolvers and webhook; Tekton's own manifests (config/ of its module).
#
# Looked for in this order:
#   1. $KUBEBUILDER_ASSETS, if it holds kube-apiserver and etcd (envtest layout);
#   2. the per-version cache: ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}/envtest/<versions>;
#   3. built here from Go modules with the machine's Go toolchain, into that cache.
# Tekton (github.com/tektoncd/pipeline at TEKTON_VERSION) has its own lookup,
# with TEKTON_ASSETS in place of KUBEBUILDER_ASSETS; see below.
#
# --no-tekton-binaries: everything but Tekton's binaries (its manifests are
# still fetched: the CRDs go on every control plane), for what runs no Tekton;
# hack/test.sh builds that first, so that such tests start while Tekton builds.
#
# TEKTON_VERSION in the environment selects another Tekton Pipelines release
# than versions.env's (the compatibility matrix, hack/matrix): it is built
# from its own committed wrapper module, hack/envtest/tekton-<version>
# (TEKTON_VERSION=<version> hack/envtest/gen-modules.sh tekton makes it), and
# cached under its own version like the default one.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
tekton_binaries=1
for arg in "$@"; do
  case $arg in
    --no-tekton-binaries) tekton_binaries=0 ;;
    *) printf 'envtest: unknown argument %s (--no-tekton-binaries)\n' "$arg" >&2; exit 2 ;;
  esac
done
requested_tekton=${TEKTON_VERSION:-}
# shellcheck source=versions.env
. "$here/versions.env"
# shellcheck source=tekton-module.sh
. "$here/tekton-module.sh"
tekton_module=$(tekton_module_name "${requested_tekton:-$TEKTON_VERSION}" "$TEKTON_VERSION")
TEKTON_VERSION=${requested_tekton:-$TEKTON_VERSION}

log() { printf 'envtest: %s\n' "$*" >&2; }

cache_root=${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}
dir="$cache_root/envtest/k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}"

# One install at a time per cache: the builds below go through bin.tmp
# folders, and a second run started meanwhile (a benchmark beside the tests)
# would remove the first one's. It waits, then finds the binaries built.
mkdir -p "$cache_root"
if command -v flock >/dev/null; then
  exec 9>"$cache_root/.envtest.lock"
  flock 9
fi

if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/kube-apiserver" ] && [ -x "$KUBEBUILDER_ASSETS/etcd" ]; then
  bin_dir=$KUBEBUILDER_ASSETS
  log "using binaries from KUBEBUILDER_ASSETS=$bin_dir"
else
  bin_dir="$dir/bin"
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-3GiB}
  kminor=${KUBERNETES_VERSION#v1.}; kminor=${kminor%%.*}
  if [ ! -x "$bin_dir/kube-apiserver" ] || [ ! -x "$bin_dir/kubectl" ]; then
    command -v go >/dev/null || { log "Go is needed to build kube-apiserver (no cached binaries in $bin_dir)"; exit 1; }
    log "building kube-apiserver and kubectl ${KUBERNETES_VERSION} (first run only; several minutes)"
    mkdir -p "$bin_dir.tmp"
    # GOGC=off with GOMEMLIMIT=3GiB (exported above, in every install
    # script): the compiler and linker are Go programs; they collect no
    # garbage until a process holds 3 GiB, which few packages reach (peak
    # RSS 1.3 GB for the registry, 1.0 GB for helm). Measured cold, 2 cores:
    # the registry 259 s of CPU with Go's default GOGC=100, 194 s with 400
    # (-25%); helm 306 s with 400, 271 s off (-11%, 2026-11-29).
    # -gcflags=all=-dwarf=false: the linker drops DWARF (-w), so compiling it
    # is wasted (measured: ~17% less CPU for the builds). Keep the flags the same
    # in every install script (envtest, helm, kcp, platform): packages two builds
    # have in common then come from the shared Go build cache. The code is the
    # same as without it, so binaries cached before it are still used.
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags="$ldflags -X $pkg.gitVersion=${KUBERNETES_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=${kminor} -X $pkg.gitTreeState=clean"
    done
    (cd "$here/kube" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "$ldflags" -o "$bin_dir.tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl)
    mkdir -p "$bin_dir"
    mv "$bin_dir.tmp/kube-apiserver" "$bin_dir.tmp/kubectl" "$bin_dir/"
  fi
  if [ ! -x "$bin_dir/etcd" ]; then
    command -v go >/dev/null || { log "Go is needed to build etcd (no cached binary in $bin_dir)"; exit 1; }
    log "building etcd ${ETCD_VERSION} (first run only)"
    mkdir -p "$bin_dir.tmp"
    (cd "$here/etcd" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$bin_dir.tmp/etcd" go.etcd.io/etcd/server/v3)
    mkdir -p "$bin_dir"
    mv "$bin_dir.tmp/etcd" "$bin_dir/"
  fi
  rmdir "$bin_dir.tmp" 2>/dev/null || true
fi

# --- Tekton: controller, resolvers and webhook binaries plus the module's own
# manifests (config/: CRDs, config-* ConfigMaps, resolvers/). Looked for in
# $TEKTON_ASSETS (a directory with bin/{controller,resolvers,webhook} and
# config/), then the per-version cache, then built from the wrapper module.
tekton_dir="$cache_root/tekton/${TEKTON_VERSION}"
# Tekton has locks of its own (taking one releases the control plane's
# lock above): its build takes minutes, and what needs only the control
# plane (--no-tekton-binaries) or another Tekton version must not wait for
# it. Its manifests have a lock apart from its binaries for the same reason.
tekton_lock() { # NAME
  if command -v flock >/dev/null; then
    exec 9>"$cache_root/.tekton-${TEKTON_VERSION}$1.lock"
    flock 9
  fi
}
tekton_lock -config
if [ -n "${TEKTON_ASSETS:-}" ] && [ -x "$TEKTON_ASSETS/bin/controller" ] && [ -d "$TEKTON_ASSETS/config/300-crds" ]; then
  tekton_dir=$TEKTON_ASSETS
  log "using Tekton from TEKTON_ASSETS=$tekton_dir"
else
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-3GiB}
  tekton_src="$here/$tekton_module"
  if ! grep -qx "require github.com/tektoncd/pipeline ${TEKTON_VERSION}" "$tekton_src/go.mod" 2>/dev/null; then
    log "no wrapper module for Tekton ${TEKTON_VERSION}: $tekton_src/go.mod must require github.com/tektoncd/pipeline ${TEKTON_VERSION} (make it with: TEKTON_VERSION=${TEKTON_VERSION} bash hack/envtest/gen-modules.sh tekton, and commit it)"
    exit 1
  fi
  if [ ! -f "$tekton_dir/config/300-crds/300-pipelinerun.yaml" ]; then
    command -v go >/dev/null || { log "Go is needed to fetch Tekton's manifests (nothing cached in $tekton_dir)"; exit 1; }
    log "fetching Tekton ${TEKTON_VERSION} manifests"
    src=$(go mod download -json "github.com/tektoncd/pipeline@${TEKTON_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
    [ -d "$src/config/300-crds" ] || { log "no config/300-crds in github.com/tektoncd/pipeline@${TEKTON_VERSION}"; exit 1; }
    rm -rf "$tekton_dir/config.tmp"
    mkdir -p "$tekton_dir"
    cp -r "$src/config" "$tekton_dir/config.tmp"
    chmod -R u+w,a+rX "$tekton_dir/config.tmp"
    rm -rf "$tekton_dir/config"
    mv "$tekton_dir/config.tmp" "$tekton_dir/config"
  fi
  if [ "$tekton_binaries" = 1 ]; then tekton_lock ""; fi
  if [ "$tekton_binaries" = 1 ] && { [ ! -x "$tekton_dir/bin/controller" ] || [ ! -x "$tekton_dir/bin/resolvers" ] || [ ! -x "$tekton_dir/bin/webhook" ]; }; then
    command -v go >/dev/null || { log "Go is needed to build Tekton (no cached binaries in $tekton_dir/bin)"; exit 1; }
    log "building Tekton ${TEKTON_VERSION} controller, resolvers and webhook from hack/envtest/${tekton_module} (first run only; a few minutes)"
    build_started=$(date +%s)
    rm -rf "$tekton_dir/bin.tmp"
    mkdir -p "$tekton_dir/bin.tmp"
    # -gcflags: see the kube-apiserver build above.
    (cd "$tekton_src" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$tekton_dir/bin.tmp/" \
      github.com/tektoncd/pipeline/cmd/controller github.com/tektoncd/pipeline/cmd/resolvers \
      github.com/tektoncd/pipeline/cmd/webhook)
    rm -rf "$tekton_dir/bin"
    mv "$tekton_dir/bin.tmp" "$tekton_dir/bin"
    log "built Tekton ${TEKTON_VERSION} in $(( $(date +%s) - build_started )) s"
  fi
fi

# One line of machine-readable output for callers (the test harness, CI).
printf '{"binDir":"%s","tektonBinDir":"%s","tektonConfigDir":"%s","tektonCrdDir":"%s","kubernetesVersion":"%s","etcdVersion":"%s","tektonVersion":"%s"}\n' \
  "$bin_dir" "$tekton_dir/bin" "$tekton_dir/config" "$tekton_dir/config/300-crds" "$KUBERNETES_VERSION" "$ETCD_VERSION" "$TEKTON_VERSION"
