#!/usr/bin/env bash
# Build the Debian base images the containers run (no registry is reachable): debootstrap a minimal system with
# python3, sudo, ca-certificates, gnupg and openssh-server (never started but where a scenario reaches its hosts over
# SSH: molecule/default), refresh its apt lists once (an installed machine has them; tests that need a host without
# lists, as a fresh cloud image is, remove them in their prepare step), then `docker import` it.
# Cached by tag: an existing image of this recipe (label gpulab.image) is kept.
# Usage: base-images.sh [SUITE...]   (default: bookworm trixie)
set -euo pipefail

log() { printf '[base-images] %s\n' "$*" >&2; }

suites=("$@")
[ ${#suites[@]} -gt 0 ] || suites=(bookworm trixie)

# The Debian mirror this machine already uses (read from its apt sources, never written into the project).
debian_mirror() {
  local uri
  uri=$(grep -hsE '^(URIs:|deb )' /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
    | grep -E '/debian/?( |$)' | grep -v security | head -n 1 | sed -E 's/^URIs: *//; s/^deb (\[[^]]*\] )?//; s/ .*//')
  [ -n "$uri" ] || { log "no Debian mirror found in this machine's apt sources"; exit 1; }
  printf '%s\n' "$uri"
}

command -v debootstrap >/dev/null 2>&1 || DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null

# Bumped when the recipe changes, so that a cached image of an older recipe is rebuilt.
recipe=3

build_image() {
  local suite=$1 tag="gpulab/debian:$1" mirror root start
  if [ "$(docker image inspect -f '{{ index .Config.Labels "gpulab.image" }}' "$tag" 2>/dev/null)" = "$recipe" ]; then
    log "$tag cached"
    return 0
  fi
  mirror=$(debian_mirror)
  root=$(mktemp -d "/var/tmp/gpulab-rootfs-${suite}.XXXXXX")
  log "debootstrap $suite (this takes about a minute)"
  start=$(date +%s)
  debootstrap --variant=minbase --include=python3,sudo,ca-certificates,gnupg,procps,openssh-server \
    "$suite" "$root" "$mirror" >"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; return 1; }
  # The lists an installed machine has (python3-apt and the kernel headers are looked up there), then no .debs.
  cp /etc/resolv.conf "$root/etc/resolv.conf"
  chroot "$root" apt-get update -qq >>"$root.log" 2>&1 || { tail -n 30 "$root.log" >&2; return 1; }
  # Containers get the resolver of their host; the image keeps none.
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/cache/apt/*.bin "$root/etc/resolv.conf"
  tar -C "$root" -c . | docker import -c 'CMD ["sleep", "infinity"]' -c "LABEL gpulab.image=$recipe" - "$tag" >/dev/null
  rm -rf "$root" "$root.log"
  log "$tag built in $(( $(date +%s) - start )) s"
}

# The suites at once: most of the time is downloading.
pids=()
for suite in "${suites[@]}"; do
  build_image "$suite" &
  pids+=($!)
done
failed=0
for pid in "${pids[@]}"; do wait "$pid" || failed=1; done
exit $failed
