#!/usr/bin/env bash
# Makes the test control plane's binaries available and prints the directory
# that holds them (kube-apiserver, etcd, kubectl, tekton-crds/).
#
# Looked for in this order:
#   1. $KUBEBUILDER_ASSETS, if it holds kube-apiserver and etcd (envtest layout);
#   2. the per-version cache: ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}/envtest/<versions>;
#   3. built here from Go modules with the machine's Go toolchain, into that cache.
# The Tekton CRDs always come from the github.com/tektoncd/pipeline module at
# TEKTON_VERSION and are copied next to the binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"

log() { printf 'envtest: %s\n' "$*" >&2; }

cache_root=${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}
dir="$cache_root/envtest/k8s-${KUBERNETES_VERSION}_etcd-${ETCD_VERSION}_tekton-${TEKTON_VERSION}"

if [ -n "${KUBEBUILDER_ASSETS:-}" ] && [ -x "$KUBEBUILDER_ASSETS/kube-apiserver" ] && [ -x "$KUBEBUILDER_ASSETS/etcd" ]; then
  bin_dir=$KUBEBUILDER_ASSETS
  log "using binaries from KUBEBUILDER_ASSETS=$bin_dir"
else
  bin_dir="$dir/bin"
  export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0
  kminor=${KUBERNETES_VERSION#v1.}; kminor=${kminor%%.*}
  if [ ! -x "$bin_dir/kube-apiserver" ] || [ ! -x "$bin_dir/kubectl" ]; then
    command -v go >/dev/null || { log "Go is needed to build kube-apiserver (no cached binaries in $bin_dir)"; exit 1; }
    log "building kube-apiserver and kubectl ${KUBERNETES_VERSION} (first run only; several minutes)"
    mkdir -p "$bin_dir.tmp"
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags="$ldflags -X $pkg.gitVersion=${KUBERNETES_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=${kminor} -X $pkg.gitTreeState=clean"
    done
    (cd "$here/kube" && go build -trimpath -ldflags "$ldflags" -o "$bin_dir.tmp/" \
      k8s.io/kubernetes/cmd/kube-apiserver k8s.io/kubernetes/cmd/kubectl)
    mkdir -p "$bin_dir"
    mv "$bin_dir.tmp/kube-apiserver" "$bin_dir.tmp/kubectl" "$bin_dir/"
  fi
  if [ ! -x "$bin_dir/etcd" ]; then
    command -v go >/dev/null || { log "Go is needed to build etcd (no cached binary in $bin_dir)"; exit 1; }
    log "building etcd ${ETCD_VERSION} (first run only)"
    mkdir -p "$bin_dir.tmp"
    (cd "$here/etcd" && go build -trimpath -ldflags "-s -w" -o "$bin_dir.tmp/etcd" go.etcd.io/etcd/server/v3)
    mkdir -p "$bin_dir"
    mv "$bin_dir.tmp/etcd" "$bin_dir/"
  fi
  rmdir "$bin_dir.tmp" 2>/dev/null || true
fi

crd_dir="$dir/tekton-crds"
if [ ! -f "$crd_dir/300-pipelinerun.yaml" ]; then
  log "fetching Tekton CRDs ${TEKTON_VERSION}"
  src=$(GOFLAGS=-mod=mod go mod download -json "github.com/tektoncd/pipeline@${TEKTON_VERSION}" | sed -n 's/.*"Dir": "\(.*\)".*/\1/p')
  [ -d "$src/config/300-crds" ] || { log "no config/300-crds in github.com/tektoncd/pipeline@${TEKTON_VERSION}"; exit 1; }
  mkdir -p "$crd_dir"
  for f in 300-pipeline.yaml 300-pipelinerun.yaml 300-task.yaml 300-taskrun.yaml; do
    cp "$src/config/300-crds/$f" "$crd_dir/$f"
    chmod 644 "$crd_dir/$f"
  done
fi

# One line of machine-readable output for callers (the test harness, CI).
printf '{"binDir":"%s","tektonCrdDir":"%s","kubernetesVersion":"%s","etcdVersion":"%s","tektonVersion":"%s"}\n' \
  "$bin_dir" "$crd_dir" "$KUBERNETES_VERSION" "$ETCD_VERSION" "$TEKTON_VERSION"
