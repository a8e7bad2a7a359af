#!/usr/bin/env bash
# buildah with the storage the image build and its test share: the vfs driver
# (no overlay or fuse needed, works inside a VM or a container) in a store of
# this project's own, so it never meets a store another tool set up with
# another driver. Process isolation is chroot (no OCI runtime, no daemon).
#
#   IMAGE_STORAGE_ROOT     images and layers (default: $CACHE/buildah/storage)
#   IMAGE_STORAGE_RUNROOT  transient state, locks (default: /run/internal-services/buildah)
# where CACHE is ${INTERNAL_SERVICES_CACHE:-~/.cache/internal-services}.
set -euo pipefail
cache=${INTERNAL_SERVICES_CACHE:-$HOME/.cache/internal-services}
export BUILDAH_ISOLATION=chroot
exec buildah \
  --storage-driver vfs \
  --root "${IMAGE_STORAGE_ROOT:-$cache/buildah/storage}" \
  --runroot "${IMAGE_STORAGE_RUNROOT:-/run/internal-services/buildah}" \
  "$@"
