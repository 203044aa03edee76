#!/usr/bin/env bash
# shellcheck disable=SC2129  # each step appends its own line to the summary as it ends
# The kernel side (docs/hardware.md's driver guard, docs/health.md's kernel log) on the real Ubuntu host:
#   1. the probe's driver section (kernels, headers, DKMS trees, free space of /boot and /var/lib/dkms, the loaded
#      amdgpu) read on the host;
#   2. the driver phase of the default release (10.1.0) planned in check mode with the driver forced on
#      (rocm_kernel_driver: always; the host is a container in a VM, where it is otherwise not wanted): what the plan
#      and its guard say about this host; nothing is written;
#   3. the health check installed (provision.yml --tags health) and run twice: where it reads the kernel log on this
#      host, how much it read, and that the second run reads only what came since the first.
# Needs the ansible-core wheels in .whl/validate (docs/validation.md), the built mirror in .cache/mirror/www, OUT.
# shellcheck source=tests/device/ansible-env.sh
. tests/device/ansible-env.sh
# shellcheck source=tests/device/serve-mirror.sh
. tests/device/serve-mirror.sh
inv=tests/device/inventory.yml
{ date -u +%FT%TZ; uname -r; ls /lib/modules 2>&1; df -m /boot /var/lib 2>&1; ls /var/lib/dkms 2>&1
  command -v journalctl dkms 2>&1; ls -l /dev/kmsg 2>&1; } >"$OUT/env.txt" 2>&1
ansible-playbook -i "$inv" tests/device/kernel-side.yml >"$OUT/probe.log" 2>&1; echo "probe rc=$?" >>"$OUT/summary.txt"
ansible-playbook -i "$inv" site.yml --check --diff --tags driver -e '{"rocm_kernel_driver": "always", "rocm_version": "10.1.0"}' \
  >"$OUT/driver-check.log" 2>&1
echo "driver check rc=$?" >>"$OUT/summary.txt"
ansible-playbook -i "$inv" playbooks/provision.yml --tags health -e '{"rocm_health_gpu_count": 0}' >"$OUT/health-install.log" 2>&1
echo "health install rc=$?" >>"$OUT/summary.txt"
for run in 1 2; do
  /usr/sbin/gpulab-gpu-health --json >"$OUT/health-$run.json" 2>"$OUT/health-$run.err"; echo "health run $run rc=$?" >>"$OUT/summary.txt"
done
python3 - "$OUT" >>"$OUT/summary.txt" <<'PY'
import json, sys
for run in (1, 2):
    result = json.load(open("%s/health-%d.json" % (sys.argv[1], run)))
    log = result.get("kernel_log") or {}
    print("health run %d: verdict %s; kernel log source %s, %s bytes, %s lines, truncated %s, found %s" % (
        run, result.get("verdict"), log.get("source"), log.get("bytes"), log.get("lines"), log.get("truncated"),
        dict((code, n) for code, n in (log.get("run") or {}).items() if n)))
    for check in result.get("checks", []):
        if check["check"] in ("kernel_log", "amdgpu_module", "amdgpu_loaded") or check["status"] != "pass":
            print("  %s %s %s: %s" % (check["code"], check["status"], check["gpu"], check["reason"]))
PY
# The check reads no kernel log on a node with no AMD GPU (it expects none: only GPU_COUNT): its kmsg reader and
# rules, as installed, on this host's real /dev/kmsg, twice, the second from where the first ended.
python3 -I - >>"$OUT/summary.txt" 2>&1 <<'PY'
import sys
sys.path.insert(0, "/usr/lib/gpulab/python")
from ansible_collections.gpulab.rocm.plugins.module_utils.node import kernel_log, kernel_log_rules
first = kernel_log.read_kmsg(None, 4 * 1024 * 1024)
second = kernel_log.read_kmsg((first["position"] or {}).get("seq"), 4 * 1024 * 1024)
for name, read in (("first", first), ("second", second)):
    texts = [record["text"] for record in read["records"]]
    hits = sorted(set(rule["code"] for rule in kernel_log_rules.RULES for text in texts
                      if __import__("re").search(rule["pattern"], text)))
    print("kmsg %s read: problem %s, %d bytes, %d kernel records, truncated %s, lost %s, last seq %s; rules "
          "matching any line: %s" % (name, read["problem"], read["bytes"], read["lines"], read["truncated"],
                                     read["lost"], (read["position"] or {}).get("seq"), hits or "none"))
PY
grep -E 'driver: |is not ready|nothing was changed|msg:' "$OUT/driver-check.log" | head -n 30 >>"$OUT/summary.txt"
sed -i -E "s#$PWD#<checkout>#g; s#$OUT#<out>#g; s#127.0.0.1:$(cat /tmp/mirror.port)#127.0.0.1:PORT#g; s#/tmp/site/#<wheels>/#g; s#archive\.ubuntu\.com#UBUNTU-ARCHIVE#g" \
  "$OUT"/*.log "$OUT"/*.txt 2>/dev/null
cat "$OUT/summary.txt"
