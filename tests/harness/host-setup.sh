#!/usr/bin/env bash
# Everything the tests and the local lab need on this machine, from a fresh Debian: host packages, a Docker engine,
# the Debian base images, and the Python venv with the pinned requirements.
# Usage: host-setup.sh [PART...]   (default: all of them, in this order)
#   base      the host packages, the Docker engine, the venv with requirements-test.txt
#   images    the Debian base images (tests/harness/base-images.sh)
#   validate  PyTorch's CPU wheel into the venv (requirements-validate.txt: only the validation tests use it)
# The test command runs `base`, then `images` and `validate` beside its first checks (tests/run.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
parts=("$@")
[ ${#parts[@]} -gt 0 ] || parts=(base images validate)

log() { printf '[host-setup] %s\n' "$*" >&2; }

# Debian packages: docker.io (engine), debootstrap (base images), dpkg-dev + apt-utils + gnupg (fixture mirror),
# gcc (the mirror's stand-in shared libraries), prometheus (promtool: the metrics textfile and alert rule tests),
# openssh-client (the SSH lab: molecule/default reaches its hosts over SSH).
host_packages() {
  local need=() tool
  for tool in dockerd:docker.io debootstrap:debootstrap dpkg-deb:dpkg apt-ftparchive:apt-utils gpg:gnupg gcc:gcc \
      promtool:prometheus ssh:openssh-client; do
    command -v "${tool%%:*}" >/dev/null 2>&1 || need+=("${tool#*:}")
  done
  # The venv is made from the distribution's Python (venv_python), which needs python3-venv for that.
  if [ -x /usr/bin/python3 ] && ! /usr/bin/python3 -c 'import ensurepip' 2>/dev/null; then need+=(python3-venv); fi
  if [ ${#need[@]} -gt 0 ]; then
    log "installing ${need[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${need[@]}" >/dev/null
  fi
}

# The venv's Python: the distribution's where it has venv, else python3 on PATH. Debian builds its Python with
# profile-guided optimisation and link-time optimisation, which a Python built from source (pyenv's) lacks by default:
# ansible-playbook and pytest took 5 to 8 % less CPU on it, side by side (docs/testing.md).
venv_python() {
  local python=python3
  if [ -x /usr/bin/python3 ] && /usr/bin/python3 -c 'import ensurepip, venv' 2>/dev/null; then python=/usr/bin/python3; fi
  "$python" -c 'import os, sys; print(os.path.realpath(sys.executable))'
}

# Each requirements file is installed again when it changes (its checksum is kept in the venv); a venv of another
# Python than venv_python's is made anew.
install_requirements() {
  local file=$1 stamp=.venv/.${1%.txt}.sha256 want python
  python=$(venv_python)
  if [ -e .venv ] && [ "$(readlink -f .venv/bin/python3)" != "$python" ]; then
    log "making .venv anew from $python (it was made from $(readlink -f .venv/bin/python3))"
    rm -rf .venv
  fi
  want=$(sha256sum "$file" requirements.txt | sha256sum | cut -d' ' -f1)
  [ "$(cat "$stamp" 2>/dev/null)" != "$want" ] || return 0
  log "installing $file into .venv"
  [ -x .venv/bin/pip ] || { "$python" -m venv .venv && .venv/bin/pip install -q --upgrade pip; }
  .venv/bin/pip install -q -r "$file"
  echo "$want" >"$stamp"
}

# Debian's dkms, unpacked (not installed: its postinst and dependencies are for a host that builds modules) into
# .cache/dkms, for the unit test that has dkms itself read and remove the DKMS trees the probe reads
# (test_driver_probe.py; tests/run.sh points GPULAB_TEST_DKMS at it).
unpacked_dkms() {
  local work
  [ -x .cache/dkms/usr/sbin/dkms ] && return 0
  work=$(mktemp -d)
  (cd "$work" && apt-get download -qq dkms >/dev/null 2>&1) || { rm -rf "$work"; log "could not download dkms"; return 1; }
  mkdir -p .cache/dkms && dpkg-deb -x "$work"/dkms_*.deb .cache/dkms
  rm -rf "$work"
}

for part in "${parts[@]}"; do
  case $part in
    base)
      host_packages
      # The venv downloads from the package index while the engine starts.
      install_requirements requirements-test.txt &
      venv_pid=$!
      tests/harness/docker-engine.sh
      unpacked_dkms
      wait "$venv_pid" || { log "building .venv failed"; exit 1; } ;;
    images) tests/harness/base-images.sh bookworm trixie ;;
    validate) install_requirements requirements-validate.txt ;;
    *) log "unknown part: $part (base, images, validate)"; exit 2 ;;
  esac
done
