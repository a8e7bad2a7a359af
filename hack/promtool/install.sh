#!/usr/bin/env bash
# Makes Prometheus' promtool available and prints its path (one line on
# stdout; progress goes to stderr). Idempotent: a promtool fetched or built by
# an earlier run is reused from the cache.
#
# Looked for in this order:
#   1. $PROMTOOL, if it is an executable;
#   2. `promtool` on PATH (e.g. /usr/bin/promtool of an installed Debian
#      `prometheus` package);
#   3. the cache: ${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}/promtool/;
#   4. Debian's `prometheus` package (bookworm: 2.42.0): `apt-get download`
#      fetches the .deb (19 MB, a few seconds) and only usr/bin/promtool is
#      extracted from it into the cache. Nothing is installed system-wide, no
#      daemon, no root needed while apt's package lists are present (if the
#      download fails as root, it runs `apt-get update` and tries again);
#   5. built from the Prometheus Go module (PROMTOOL_GO_VERSION below) with
#      the machine's Go into the cache, for machines without apt. Slow:
#      promtool links every service-discovery plugin (AWS, Azure, GCE, ...),
#      1.8 GB of modules; 39 minutes cold on a busy shared 2-core machine.
#
# PROMTOOL_SOURCE=debian or PROMTOOL_SOURCE=go skips 1-2 and uses (or makes)
# only that cached promtool.
set -euo pipefail

PROMTOOL_GO_VERSION=${PROMTOOL_GO_VERSION:-v0.316.0} # Prometheus 3.x: module versions are v0.3MM.P for 3.MM.P

log() { printf 'promtool: %s\n' "$*" >&2; }

cache_root=${INTERNAL_SERVICES_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/internal-services}
deb_dir="$cache_root/promtool/debian"
go_dir="$cache_root/promtool/go-${PROMTOOL_GO_VERSION}"
source_wanted=${PROMTOOL_SOURCE:-}

works() { [ -x "$1" ] && "$1" --version >/dev/null 2>&1; }
found() {
  log "using $1 ($("$1" --version 2>&1 | head -n1))"
  printf '%s\n' "$1"
  exit 0
}

case "$source_wanted" in
  '' | debian | go) ;;
  *) log "PROMTOOL_SOURCE must be debian or go (got \"$source_wanted\")"; exit 2 ;;
esac

if [ -z "$source_wanted" ]; then
  if [ -n "${PROMTOOL:-}" ]; then
    works "$PROMTOOL" || { log "PROMTOOL=$PROMTOOL is not a working promtool"; exit 1; }
    found "$PROMTOOL"
  fi
  if p=$(command -v promtool 2>/dev/null) && works "$p"; then found "$p"; fi
fi

if [ "$source_wanted" != go ] && works "$deb_dir/promtool"; then found "$deb_dir/promtool"; fi
if [ "$source_wanted" != debian ] && works "$go_dir/promtool"; then found "$go_dir/promtool"; fi

# In a subshell, so that its temporary directory goes with it.
from_debian() (
  command -v apt-get >/dev/null && command -v dpkg-deb >/dev/null || { log "no apt-get/dpkg-deb here"; return 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  apt_opts=(-q)
  # As root apt would hand the download to its unprivileged _apt user, which cannot write to our temp dir.
  [ "$(id -u)" = 0 ] && apt_opts+=(-o APT::Sandbox::User=root)
  log "fetching Debian's prometheus package (only promtool is kept)"
  if ! (cd "$tmp" && apt-get "${apt_opts[@]}" download prometheus) >&2; then
    if [ "$(id -u)" = 0 ]; then
      log "apt-get download failed; updating apt's package lists and trying again"
      apt-get -q update >&2 || return 1
      (cd "$tmp" && apt-get "${apt_opts[@]}" download prometheus) >&2 || return 1
    else
      log "apt-get download failed (as root, this script would run apt-get update and try again)"
      return 1
    fi
  fi
  deb=$(ls "$tmp"/prometheus_*.deb 2>/dev/null | head -n1)
  [ -n "$deb" ] || { log "apt-get download produced no .deb"; return 1; }
  dpkg-deb -x "$deb" "$tmp/x" || return 1
  works "$tmp/x/usr/bin/promtool" || { log "the package's promtool does not run"; return 1; }
  mkdir -p "$deb_dir"
  dpkg-deb -f "$deb" Version >"$deb_dir/VERSION"
  cp "$tmp/x/usr/bin/promtool" "$deb_dir/promtool.tmp"
  mv "$deb_dir/promtool.tmp" "$deb_dir/promtool"
)

from_go() {
  command -v go >/dev/null || { log "no Go toolchain here"; return 1; }
  log "building promtool from github.com/prometheus/prometheus@${PROMTOOL_GO_VERSION} (first run only; slow)"
  # promtool --version: v0.3MM.P is Prometheus 3.MM.P, v0.MM.P is 2.MM.P.
  local mod=${PROMTOOL_GO_VERSION#v0.} release
  local minor=${mod%%.*}
  if [ "$minor" -ge 300 ] 2>/dev/null; then release="3.$((minor - 300)).${mod#*.}"; else release="2.${mod}"; fi
  rm -rf "$go_dir.tmp"
  mkdir -p "$go_dir.tmp"
  GOBIN="$go_dir.tmp" GOTOOLCHAIN=local CGO_ENABLED=0 GOFLAGS=-mod=mod \
    go install -trimpath -ldflags "-s -w -X github.com/prometheus/common/version.Version=${release}" \
    "github.com/prometheus/prometheus/cmd/promtool@${PROMTOOL_GO_VERSION}" >&2 || return 1
  mkdir -p "$go_dir"
  mv "$go_dir.tmp/promtool" "$go_dir/promtool"
  rm -rf "$go_dir.tmp"
}

if [ "$source_wanted" != go ] && from_debian && works "$deb_dir/promtool"; then found "$deb_dir/promtool"; fi
if [ "$source_wanted" != debian ] && from_go && works "$go_dir/promtool"; then found "$go_dir/promtool"; fi

log "could not get promtool: set PROMTOOL to one, install Debian's prometheus package (apt-get install --no-install-recommends prometheus), or install Go to build it"
exit 1
