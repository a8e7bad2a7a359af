#!/usr/bin/env bash
# Builds the controller's image from the Dockerfile with buildah: no daemon,
# vfs storage, chroot isolation (see hack/image/buildah.sh for the store).
#
#   hack/image/build.sh [--tag NAME] [--base IMAGE]
#
# --tag   the image's name (default localhost/internal-services:dev)
# --base  the Dockerfile's BASE_IMAGE. Without it the build uses CI's stand-in
#         for docker.io/library/node:26-trixie-slim (that registry cannot be
#         reached from CI machines), made by hack/image/base.sh and cached:
#           1. in buildah's store, as localhost/internal-services-base:KEY;
#           2. else as an OCI archive, $CACHE/images/KEY/base.oci.tar;
#           3. else built (debootstrap, Node.js from the npm registry), then
#              kept in both places.
#         KEY hashes base.sh and versions.env: a changed recipe or version is
#         a new stand-in; older ones are removed.
#
# CACHE is ${INTERNAL_SERVICES_CACHE:-~/.cache/internal-services}. Prints one
# "image: ..." line per step with its duration.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
cache=${INTERNAL_SERVICES_CACHE:-$HOME/.cache/internal-services}
tag=localhost/internal-services:dev
base=
key=
while [ $# -gt 0 ]; do
  case $1 in
    --tag) tag=${2:?--tag needs a name}; shift 2 ;;
    --base) base=${2:?--base needs an image}; shift 2 ;;
    -h|--help) sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "build.sh: unknown argument $1" >&2; exit 2 ;;
  esac
done

if ! command -v buildah >/dev/null; then
  echo "build.sh: buildah is not installed (Debian: apt-get install buildah; .ci/run installs it)" >&2
  exit 1
fi
buildah() { "$here/buildah.sh" "$@"; }
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f s", b - a }'; }

# One build at a time per cache (the store and the archives are shared).
mkdir -p "$cache/images"
exec 9>"$cache/images/.lock"
flock 9

if [ -z "$base" ]; then
  key=$(cat "$here/base.sh" "$here/versions.env" | sha256sum | cut -c1-16)
  base=localhost/internal-services-base:$key
  archive=$cache/images/$key/base.oci.tar
  t0=$(now)
  if buildah inspect --type image "$base" >/dev/null 2>&1; then
    echo "image: base $base reused from buildah's store in $(since "$t0")"
  elif [ -f "$archive" ]; then
    buildah pull --quiet "oci-archive:$archive" >/dev/null
    echo "image: base $base loaded from $archive in $(since "$t0")"
  else
    bash "$here/base.sh" "$base" "$cache/images/$key/work"
    buildah push --quiet "$base" "oci-archive:$archive.tmp:$base" >/dev/null
    mv "$archive.tmp" "$archive"
    echo "image: base $base built in $(since "$t0") (kept in $archive)"
  fi
fi

t0=$(now)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# --network host: the build stage's npm ci reaches the npm registry as this
# machine does. --pull=never for the stand-in: it exists only in the store.
pull=missing
case $base in localhost/*) pull=never ;; esac
# The CA certificates this machine's Node.js trusts (a proxy that intercepts
# TLS needs them), for the build stage's npm ci only: a build secret, in no
# layer. IMAGE_BUILD_CA_CERTS, else NODE_EXTRA_CA_CERTS, else npm's cafile.
ca=${IMAGE_BUILD_CA_CERTS:-${NODE_EXTRA_CA_CERTS:-}}
if [ -z "$ca" ]; then ca=$(npm config get cafile 2>/dev/null || true); fi
secret=()
if [ -n "$ca" ] && [ "$ca" != null ] && [ "$ca" != undefined ] && [ -f "$ca" ]; then
  secret=(--secret "id=ca-certificates,src=$ca")
fi
if ! buildah bud \
  --isolation chroot --network host --pull="$pull" "${secret[@]}" \
  --build-arg BASE_IMAGE="$base" \
  --file "$root/Dockerfile" --tag "$tag" \
  "$root" >"$log" 2>&1; then
  tail -40 "$log" >&2
  echo "build.sh: buildah bud failed (log above)" >&2
  exit 1
fi
# The previous image of this tag, now nameless, and anything else nameless;
# then stand-ins of older recipes, out of the store and the cache (an image
# still built on one keeps it in the store).
buildah rmi --prune >/dev/null 2>&1 || true
if [ -n "${key:-}" ]; then
  for old in $(buildah images --noheading --format '{{.Name}}:{{.Tag}}' --filter reference=localhost/internal-services-base 2>/dev/null | sort -u); do
    [ "$old" = "$base" ] || buildah rmi "$old" >/dev/null 2>&1 || true
  done
  for dir in "$cache"/images/*/; do
    if [ -f "$dir/base.oci.tar" ] && [ "$(basename "$dir")" != "$key" ]; then rm -rf "$dir"; fi
  done
fi
id=$(buildah inspect --type image --format '{{.FromImageID}}' "$tag")
echo "image: $tag ($id) built from $base in $(since "$t0")"
