#!/usr/bin/env bash
# Makes what the harness's real node needs (src/localenv/real/real-node.ts) and
# prints, as one JSON line, where it is:
#
#   binaries  kubelet, kube-scheduler and kube-controller-manager, built from
#             the same k8s.io/kubernetes module (hack/envtest/kube) and with
#             the same version ldflags as the harness's kube-apiserver, in
#             ONE go build (the packages they share with each other and with
#             the apiserver come from the Go build cache). Cached per version:
#             $CACHE/node/k8s-<version>/bin.
#   images    OCI archives the node imports into its containerd:
#             - Tekton's entrypoint, nop and workingdirinit, built static from
#               the Tekton module the harness runs (hack/envtest/tekton), each
#               at /ko-app/<name> as Tekton's pod spec expects;
#             - pause (hack/node/pause), containerd's sandbox image;
#             - shell, for `script:` steps: Debian's static busybox
#               (busybox-static) with a link per applet in /bin.
#             Packed with buildah (hack/image/buildah.sh's store; the images
#             are removed from it once archived). Cached per Tekton version
#             and recipe: $CACHE/node/images/<key>.
#
#   hack/node/install.sh [binaries] [images]     (default: both)
#
# CACHE is ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}.
# One build at a time per part (flock), like the other install scripts.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
envtest=$(cd "$here/../envtest" && pwd)
requested_tekton=${TEKTON_VERSION:-}
# shellcheck source=../envtest/versions.env
. "$envtest/versions.env"
# shellcheck source=../envtest/tekton-module.sh
. "$envtest/tekton-module.sh"
tekton_module=$(tekton_module_name "${requested_tekton:-$TEKTON_VERSION}" "$TEKTON_VERSION")
TEKTON_VERSION=${requested_tekton:-$TEKTON_VERSION}

parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(binaries images)
want() { [[ " ${parts[*]} " == *" $1 "* ]]; }
for p in "${parts[@]}"; do
  case $p in binaries|images) ;; *) printf 'node: unknown part %s (binaries, images)\n' "$p" >&2; exit 2 ;; esac
done

log() { printf 'node: %s\n' "$*" >&2; }
cache_root=${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}
bin_dir="$cache_root/node/k8s-${KUBERNETES_VERSION}/bin"
mkdir -p "$cache_root"
lock() { # NAME: one holder per part; taking one releases the previous one
  if command -v flock >/dev/null; then
    exec 9>"$cache_root/.node-$1.lock"
    flock 9
  fi
}
export GOFLAGS=-mod=mod GOTOOLCHAIN=local CGO_ENABLED=0 GOGC=${GOGC:-off} GOMEMLIMIT=${GOMEMLIMIT:-3GiB}

if want binaries; then
  lock "k8s-${KUBERNETES_VERSION}"
  if [ ! -x "$bin_dir/kubelet" ] || [ ! -x "$bin_dir/kube-scheduler" ] || [ ! -x "$bin_dir/kube-controller-manager" ]; then
    command -v go >/dev/null || { log "Go is needed to build the kubelet (nothing cached in $bin_dir)"; exit 1; }
    log "building kubelet, kube-scheduler, kube-controller-manager ${KUBERNETES_VERSION} (first run only; several minutes)"
    t0=$(date +%s)
    kminor=${KUBERNETES_VERSION#v1.}; kminor=${kminor%%.*}
    # The same flags as hack/envtest/install.sh's kube-apiserver build (shared build cache; a real version).
    ldflags="-s -w"
    for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
      ldflags="$ldflags -X $pkg.gitVersion=${KUBERNETES_VERSION} -X $pkg.gitMajor=1 -X $pkg.gitMinor=${kminor} -X $pkg.gitTreeState=clean"
    done
    rm -rf "$bin_dir.tmp"
    mkdir -p "$bin_dir.tmp"
    (cd "$envtest/kube" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "$ldflags" -o "$bin_dir.tmp/" \
      k8s.io/kubernetes/cmd/kubelet k8s.io/kubernetes/cmd/kube-scheduler k8s.io/kubernetes/cmd/kube-controller-manager)
    rm -rf "$bin_dir"
    mv "$bin_dir.tmp" "$bin_dir"
    log "built kubelet, kube-scheduler, kube-controller-manager ${KUBERNETES_VERSION} in $(( $(date +%s) - t0 )) s"
  fi
fi

image_dir=
key=
if want images; then
  # The recipe is part of the key: this script, the pause program, busybox.
  busybox=${BUSYBOX_STATIC:-/bin/busybox}
  key=$( { cat "$0" "$here/pause/main.go"; echo "$TEKTON_VERSION"; sha256sum "$busybox" 2>/dev/null; } | sha256sum | cut -c1-12)
  image_dir="$cache_root/node/images/tekton-${TEKTON_VERSION}-${key}"
  lock "images"
  names=(pause entrypoint nop workingdirinit shell)
  missing=0
  for n in "${names[@]}"; do [ -f "$image_dir/$n.oci.tar" ] || missing=1; done
  if [ "$missing" = 1 ]; then
    command -v buildah >/dev/null || { log "buildah is needed to pack the node's images (apt-get install buildah)"; exit 1; }
    command -v go >/dev/null || { log "Go is needed to build Tekton's helpers (nothing cached in $image_dir)"; exit 1; }
    [ -x "$busybox" ] || { log "no static busybox at $busybox (apt-get install busybox-static)"; exit 1; }
    t0=$(date +%s)
    work="$image_dir.tmp"
    rm -rf "$work"
    mkdir -p "$work/bin"
    log "building Tekton ${TEKTON_VERSION} entrypoint, nop, workingdirinit and pause (static)"
    (cd "$envtest/$tekton_module" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$work/bin/" \
      github.com/tektoncd/pipeline/cmd/entrypoint github.com/tektoncd/pipeline/cmd/nop github.com/tektoncd/pipeline/cmd/workingdirinit)
    (cd "$here/pause" && go build -trimpath -gcflags=all=-dwarf=false -ldflags "-s -w" -o "$work/bin/pause" .)
    buildah() { "$here/../image/buildah.sh" "$@"; }
    pack() { # NAME ROOTFS_DIR ENTRYPOINT [ENV...]
      local name=$1 rootfs=$2 entry=$3 ref ctr mnt
      shift 3
      ref="localhost/internal-services/node-${name}:${TEKTON_VERSION}-${key}"
      ctr=$(buildah from scratch)
      mnt=$(buildah mount "$ctr")
      cp -a "$rootfs/." "$mnt/"
      buildah umount "$ctr" >/dev/null
      local envs=()
      for e in "$@"; do envs+=(--env "$e"); done
      buildah config --os linux --arch amd64 --entrypoint "[\"$entry\"]" "${envs[@]}" \
        --label org.opencontainers.image.title="internal-services real node: $name" "$ctr"
      buildah commit --quiet --rm "$ctr" "$ref" >/dev/null
      buildah push --quiet "$ref" "oci-archive:$work/$name.oci.tar:$ref" >/dev/null
      buildah rmi "$ref" >/dev/null 2>&1 || true
      printf '%s\n' "$ref" >"$work/$name.ref"
    }
    for n in entrypoint nop workingdirinit; do
      mkdir -p "$work/root-$n/ko-app"
      cp "$work/bin/$n" "$work/root-$n/ko-app/$n"
      pack "$n" "$work/root-$n" "/ko-app/$n"
    done
    mkdir -p "$work/root-pause"
    cp "$work/bin/pause" "$work/root-pause/pause"
    pack pause "$work/root-pause" /pause
    # shell: busybox and its applets; a /tmp and a /workspace-friendly root.
    sh_root="$work/root-shell"
    mkdir -p "$sh_root/bin" "$sh_root/tmp" "$sh_root/etc"
    chmod 1777 "$sh_root/tmp"
    cp "$busybox" "$sh_root/bin/busybox"
    for applet in $("$busybox" --list); do
      [ "$applet" = busybox ] || ln -sf busybox "$sh_root/bin/$applet"
    done
    printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/false\n' >"$sh_root/etc/passwd"
    printf 'root:x:0:\nnogroup:x:65534:\n' >"$sh_root/etc/group"
    pack shell "$sh_root" /bin/sh PATH=/bin
    rm -rf "$work"/root-* "$work/bin"
    rm -rf "$image_dir"
    mv "$work" "$image_dir"
    # Older recipes' images of this Tekton version go (other versions' stay: the matrix).
    for old in "$cache_root"/node/images/tekton-"${TEKTON_VERSION}"-*/; do
      [ "${old%/}" = "$image_dir" ] || rm -rf "$old"
    done
    log "packed the node's images (pause, entrypoint, nop, workingdirinit, shell) in $(( $(date +%s) - t0 )) s into $image_dir"
  fi
fi

ref() { cat "$image_dir/$1.ref"; }
printf '{"nodeBinDir":"%s","kubernetesVersion":"%s","tektonVersion":"%s"' "$bin_dir" "$KUBERNETES_VERSION" "$TEKTON_VERSION"
if [ -n "$image_dir" ]; then
  printf ',"imageDir":"%s","images":{"pause":"%s","entrypoint":"%s","nop":"%s","workingdirinit":"%s","shell":"%s"}' \
    "$image_dir" "$(ref pause)" "$(ref entrypoint)" "$(ref nop)" "$(ref workingdirinit)" "$(ref shell)"
fi
printf '}\n'
