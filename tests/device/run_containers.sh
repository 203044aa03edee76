#!/usr/bin/env bash
# The lent-GPU run behind docs/device-runs.md ("rocm_containers skips a host with no AMD GPU"): the containers role,
# enabled with Podman and Docker, on the real Ubuntu 24.04 host with one NVIDIA H200 and no AMD GPU. It must skip
# with its message and change nothing; the snapshots before and after prove it. Needs the ansible-core wheels
# (.whl/validate, docs/validation.md) carried.
# shellcheck source=tests/device/ansible-env.sh
. tests/device/ansible-env.sh
snapshot() {
  { find /etc /usr/bin /usr/sbin /var/lib/dpkg/info -xdev -printf '%y %m %u %s %p\n' 2>/dev/null | LC_ALL=C sort
    find /etc -xdev -type f -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 -r sha256sum 2>/dev/null; dpkg -l; } > "$1"
}
{ date -u +%FT%TZ; uname -r; grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release; python3 --version
  ansible-playbook --version | head -1; command -v podman docker || echo "no podman, no docker on PATH"
  ls -d /etc/cdi /etc/docker 2>&1; ls /sys/class/kfd 2>&1; ls /dev/dri 2>&1; } > "$OUT/env.txt" 2>&1
snapshot /tmp/before.txt
for run in 1 2; do
  start=$(date +%s%N)
  ansible-playbook -i tests/device/inventory.yml tests/device/containers.yml > "$OUT/containers-run$run.log" 2>&1
  echo "containers.yml rc=$? in $(( ($(date +%s%N) - start) / 1000000 )) ms" >> "$OUT/containers-run$run.log"
done
snapshot /tmp/after.txt
diff /tmp/before.txt /tmp/after.txt > "$OUT/snapshot-diff.txt" && echo "no change: every path under /etc, /usr/bin, /usr/sbin and /var/lib/dpkg/info (type, mode, owner, size), checksums of every file under /etc, and dpkg -l are identical before and after" > "$OUT/snapshot-diff.txt"
# No package archive's or registry's host name goes into the saved logs: every URL's host is replaced.
sed -i -E 's#(https?://)[^/[:space:]]+#\1REDACTED-HOST#g' "$OUT"/*.log "$OUT"/*.txt
tail -n 20 "$OUT/containers-run1.log"; cat "$OUT/snapshot-diff.txt"
