#!/usr/bin/env bash
# The lent-GPU run behind docs/device-runs.md: the node probe on a real Ubuntu 24.04 host with an NVIDIA GPU, then
# site.yml against the fixture ROCm mirror served on its loopback. The machine has no route out, no apt lists and no
# python3-apt, so preflight must stop before any change; the snapshots before and after prove nothing changed.
# Needs the ansible-core wheels (.whl/validate, docs/validation.md) and the built mirror (.cache/mirror/www) carried.
# shellcheck source=tests/device/ansible-env.sh
. tests/device/ansible-env.sh
snapshot() {
  { find /etc/apt /var/lib/apt/lists -xdev -printf '%y %m %u %s %p\n' 2>/dev/null | LC_ALL=C sort
    find /etc/apt -xdev -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum; dpkg -l; } > "$1"
}
python3 tests/harness/mirror/serve.py --root .cache/mirror/www --port-file /tmp/mirror.port --faults /dev/null \
  2>/tmp/mirror.log &
for _ in $(seq 50); do [ -s /tmp/mirror.port ] && break; sleep 0.1; done
export GPULAB_MIRROR_URL=http://127.0.0.1:$(cat /tmp/mirror.port)
GPULAB_MIRROR_FINGERPRINT=$(cat .cache/mirror/www/fingerprint); export GPULAB_MIRROR_FINGERPRINT
{ date -u +%FT%TZ; uname -r; grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release; python3 --version
  ansible-playbook --version | head -1; ls /var/lib/apt/lists; } > "$OUT/env.txt" 2>&1
ansible-playbook -i tests/device/inventory.yml tests/device/probe.yml > "$OUT/probe.log" 2>&1 || tail -20 "$OUT/probe.log"
snapshot /tmp/before.txt
start=$(date +%s%N)
ansible-playbook -i tests/device/inventory.yml site.yml > "$OUT/site-preflight.log" 2>&1
rc=$?
echo "site.yml rc=$rc in $(( ($(date +%s%N) - start) / 1000000 )) ms" >> "$OUT/site-preflight.log"
snapshot /tmp/after.txt
diff /tmp/before.txt /tmp/after.txt > "$OUT/snapshot-diff.txt" && echo "no change: /etc/apt, apt lists and dpkg -l are identical before and after" > "$OUT/snapshot-diff.txt"
tail -n 25 "$OUT/site-preflight.log"; cat "$OUT/snapshot-diff.txt"
