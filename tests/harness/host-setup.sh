#!/usr/bin/env bash
# Everything the tests and the local lab need on this machine, from a fresh Debian: host packages, a Docker engine,
# the Debian base images, and the Python venv with the pinned requirements.
set -euo pipefail
cd "$(dirname "$0")/../.."

log() { printf '[host-setup] %s\n' "$*" >&2; }

# Debian packages: docker.io (engine), debootstrap (base images), dpkg-dev + apt-utils + gnupg (fixture mirror),
# gcc (the mirror's stand-in shared libraries), prometheus (promtool: the metrics textfile and alert rule tests).
need=()
for tool in dockerd:docker.io debootstrap:debootstrap dpkg-deb:dpkg apt-ftparchive:apt-utils gpg:gnupg gcc:gcc \
    promtool:prometheus; do
  command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
done
if [ ${#need[@]} -gt 0 ]; then
  log "installing ${need[*]}"
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
fi

# The venv is rebuilt when a requirements file changes. It downloads from the package index while debootstrap
# downloads from Debian's archive: both run at once.
build_venv() {
  local stamp=.venv/.requirements.sha256 want
  want=$(cat requirements*.txt | sha256sum | cut -d' ' -f1)
  [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || return 0
  log "building .venv from requirements-test.txt"
  python3 -m venv .venv
  .venv/bin/pip install -q --upgrade pip
  .venv/bin/pip install -q -r requirements-test.txt -r requirements-validate.txt
  echo "$want" > "$stamp"
}
build_venv &
venv_pid=$!

tests/harness/docker-engine.sh
tests/harness/base-images.sh bookworm trixie
wait "$venv_pid" || { log "building .venv failed"; exit 1; }
