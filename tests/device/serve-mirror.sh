# shellcheck shell=bash
# Sourced by the lent-GPU scripts that need the fixture ROCm mirror (tests/device/run_site.sh, run_kernel_side.sh):
# serves the carried .cache/mirror/www on the machine's loopback and exports the GPULAB_MIRROR_* variables.
# The server holds none of the command's output open (the device tool waits for every holder), and stops with it.
python3 tests/harness/mirror/serve.py --root .cache/mirror/www --port-file /tmp/mirror.port --faults /dev/null \
  </dev/null >"$OUT/mirror.log" 2>&1 &
mirror_pid=$!
trap 'kill "$mirror_pid" 2>/dev/null' EXIT
for _ in $(seq 50); do [ -s /tmp/mirror.port ] && break; sleep 0.1; done
GPULAB_MIRROR_URL=http://127.0.0.1:$(cat /tmp/mirror.port); export GPULAB_MIRROR_URL
GPULAB_MIRROR_FINGERPRINT=$(cat .cache/mirror/www/fingerprint); export GPULAB_MIRROR_FINGERPRINT
# The ROCm Core SDK stream of the same mirror, with its own key (tests/harness/mirror/README.md).
export GPULAB_MIRROR_CORE_URL=$GPULAB_MIRROR_URL/rocm/core/packages
export GPULAB_MIRROR_CORE_KEY_URL=$GPULAB_MIRROR_URL/rocm/gpg/packages.gpg
GPULAB_MIRROR_CORE_FINGERPRINT=$(cat .cache/mirror/www/core-fingerprint); export GPULAB_MIRROR_CORE_FINGERPRINT
