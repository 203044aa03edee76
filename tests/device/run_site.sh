#!/usr/bin/env bash
# The lent-GPU run behind docs/device-runs.md, on the one real Ubuntu 24.04 host (an NVIDIA H200, no route out, no
# apt lists, no python3-apt): site.yml end to end against the fixture ROCm mirror served on its loopback, with the
# host's own archive unreachable; the second run must change nothing; a GPU user's login shell must show the
# ROCm/CUDA coexistence policy of docs/hardware.md (the variables, nvidia-smi, PyTorch seeing the NVIDIA GPU or not);
# the fleet report and verify; then playbooks/uninstall.yml, and a snapshot diff of /etc/apt, dpkg's package list,
# /etc/profile.d, the linker and adduser.conf files, our paths (/usr/sbin/gpulab-*, /usr/lib/gpulab, /etc/gpulab,
# /var/lib/gpulab, /etc/cdi, the gpulab systemd units) and the users' dotfiles against the snapshot taken before.
# Everything lands under $OUT; summary.txt says what each step found (PASS/FAIL lines), and the script exits 1 when
# any step failed.
# Needs the ansible-core wheels (.whl/validate, docs/validation.md) and the built mirror (.cache/mirror/www) carried.
# The release is the first argument (default 6.2.4, the inventory's): `bash tests/device/run_site.sh 10.1.0` (the
# Core SDK default) or `bash tests/device/run_site.sh 7.2.3`.
# shellcheck source=tests/device/ansible-env.sh
. tests/device/ansible-env.sh
GPU_USER=gpulabgpu
RELEASE=${1:-6.2.4}
[[ $RELEASE =~ ^[0-9]+\.[0-9]+(\.[0-9]+)?$ ]] || { echo "not a ROCm release: $RELEASE" >&2; exit 2; }
failed=0
say() { echo "$*" | tee -a "$OUT/summary.txt"; }
check() {  # check NAME COMMAND...: PASS or FAIL with the name
  if "${@:2}"; then say "PASS $1"; else say "FAIL $1"; failed=1; fi
}
snapshot() {
  { echo "## /etc/apt"; find /etc/apt -xdev -printf '%y %m %u %s %p\n' 2>/dev/null | LC_ALL=C sort
    find /etc/apt -xdev -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
    echo "## dpkg"; dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\n' | LC_ALL=C sort
    echo "## /etc/profile.d, ld.so.conf.d, adduser.conf"
    find /etc/profile.d /etc/ld.so.conf.d /etc/adduser.conf -xdev -printf '%y %m %u %s %p\n' 2>/dev/null | LC_ALL=C sort
    find /etc/profile.d /etc/ld.so.conf.d /etc/adduser.conf -xdev -type f -print0 2>/dev/null | LC_ALL=C sort -z \
      | xargs -0 -r sha256sum
    # What the project installs beyond ROCm's packages: the health check, the metrics writer and units, CDI specs.
    echo "## our paths"; for p in /usr/sbin/gpulab-* /usr/local/sbin/gpulab-* /usr/lib/gpulab /etc/gpulab \
        /var/lib/gpulab /etc/cdi /var/run/cdi /etc/systemd/system/gpulab-* \
        /etc/systemd/system/prometheus-node-exporter.service.d /var/lib/prometheus/node-exporter/gpulab.prom; do
      [ -e "$p" ] || [ -L "$p" ] || continue
      find "$p" -xdev -printf '%y %m %u %s %p\n' 2>/dev/null
    done | LC_ALL=C sort
    echo "## dotfiles"; for home in /root /home/*; do
      find "$home" -maxdepth 1 -name '.*' -type f -printf '%m %u %s %p\n' 2>/dev/null | LC_ALL=C sort
      find "$home" -maxdepth 1 -name '.*' -type f -print0 2>/dev/null | LC_ALL=C sort -z | xargs -0 -r sha256sum
    done; } > "$1"
}
recap() {  # the PLAY RECAP line of the host in a log
  grep -E '^lent-gpu +: ok=' "$1" | tail -1
}
site() {  # site LOGNAME [extra args]: site.yml with the run's fixed extra vars
  local log=$OUT/$1.log; shift
  local start; start=$(date +%s%N)
  ansible-playbook -i tests/device/inventory.yml site.yml -e "@$OUT/extra-vars.json" "$@" > "$log" 2>&1
  local rc=$?
  echo "rc=$rc in $(( ($(date +%s%N) - start) / 1000000 )) ms" >> "$log"
  say "$(basename "$log" .log): rc=$rc, $(recap "$log")"
  return $rc
}
login() {  # login NAME: what the GPU user's login shell sees
  su - "$GPU_USER" -c 'echo "HIP_PLATFORM=${HIP_PLATFORM-<unset>}"; echo "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES-<unset>}"
    echo "ROCM_PATH=${ROCM_PATH-<unset>}"; echo "PATH=$PATH"; nvidia-smi -L; echo "nvidia-smi rc=$?"
    '"$TORCH_PYTHON"' -c "import torch; print(\"torch\", torch.__version__, \"cuda available\", torch.cuda.is_available(), \"devices\", torch.cuda.device_count())"
    echo "torch rc=$?"' > "$OUT/login-$1.txt" 2>&1
}

# shellcheck source=tests/device/serve-mirror.sh
. tests/device/serve-mirror.sh
{ date -u +%FT%TZ; uname -r; grep -E '^(PRETTY_NAME|VERSION_ID)=' /etc/os-release; python3 --version
  ansible-playbook --version | head -1; ls /var/lib/apt/lists; dpkg -s python3-apt 2>&1 | head -2
  nvidia-smi -L; } > "$OUT/env.txt" 2>&1

# The interpreter that has torch (the system's python3, or where root finds it), for the GPU user's shell.
TORCH_PYTHON=$(python3 -c 'import sys, torch; print(sys.executable)' 2>/dev/null || command -v python3)
python3 -c 'import torch; print(torch.__version__, torch.__file__)' > "$OUT/torch-as-root.txt" 2>&1

# A GPU user of our own, made before the first snapshot (the run adds it to the GPU groups; lifecycle.md: they stay).
id "$GPU_USER" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$GPU_USER"
# No AMD GPU: the fixture rocminfo prints its no-gpu capture (no /etc/gpulab-fixture/profile), verify expects none.
printf '{"rocm_version": "%s", "rocm_gpu_users": ["%s"], "rocm_report_dest": "%s", "rocm_expected_gpu_count": 0}\n' \
  "$RELEASE" "$GPU_USER" "$OUT/fleet-report" > "$OUT/extra-vars.json"
login before
snapshot "$OUT/snapshot-before.txt"

# 1. site.yml end to end on the cold host, then again: changed=0.
check "site.yml converges (cold)" site site-1
cp "$OUT/fleet-report/fleet-report.json" "$OUT/fleet-report-1.json" 2>/dev/null
site site-2
# What the second run's report changed, if anything (the report holds no timestamp: only the fleet changes it).
diff <(python3 -m json.tool "$OUT/fleet-report-1.json") <(python3 -m json.tool "$OUT/fleet-report/fleet-report.json") \
  > "$OUT/fleet-report-diff.txt"
check "site.yml second run changed=0" grep -qE '^lent-gpu +: .*changed=0 .*failed=0' "$OUT/site-2.log"
check "python3-apt still absent" bash -c '! dpkg -s python3-apt >/dev/null 2>&1'
# A legacy release's rocm-core and rocminfo, or a Core SDK release's amdrocm<X.Y> (every target: no AMD GPU here).
series=$(echo "$RELEASE" | cut -d. -f1,2)
if [[ $series =~ ^(7\.(1[4-9]|[2-9][0-9])|[89]\.[0-9]+|[1-9][0-9]+\.[0-9]+)$ ]]; then packages="amdrocm$series"
else packages="rocm-core rocminfo"; fi
check "the ROCm packages are installed ($packages)" bash -c "for p in $packages; do
  dpkg-query -W -f '\${db:Status-Abbrev}' \$p 2>/dev/null | grep -q '^ii' || exit 1; done"
check "fleet report written" test -s "$OUT/fleet-report/fleet-report.json"
cp -r /etc/profile.d/rocm.sh "$OUT/profile.d-rocm.sh" 2>/dev/null

# 2. The default policy `both`: HIP_PLATFORM=amd only, CUDA untouched, so CUDA still sees the H200.
login both
check "both: HIP_PLATFORM=amd in the login shell" grep -qx 'HIP_PLATFORM=amd' "$OUT/login-both.txt"
check "both: CUDA_VISIBLE_DEVICES untouched" grep -qx 'CUDA_VISIBLE_DEVICES=<unset>' "$OUT/login-both.txt"
check "both: nvidia-smi lists the GPU" grep -q '^GPU 0: ' "$OUT/login-both.txt"
check "both: PyTorch sees the NVIDIA GPU" grep -q 'cuda available True devices 1' "$OUT/login-both.txt"

# 3. rocm_only: CUDA_VISIBLE_DEVICES='' hides the NVIDIA GPU from CUDA (nvidia-smi does not read it); then back.
check "site.yml with rocm_env_cuda_policy=rocm_only" site site-rocm-only --tags env -e rocm_env_cuda_policy=rocm_only
login rocm_only
check "rocm_only: CUDA_VISIBLE_DEVICES empty in the login shell" grep -qx 'CUDA_VISIBLE_DEVICES=' "$OUT/login-rocm_only.txt"
check "rocm_only: PyTorch sees no CUDA device" grep -q 'cuda available False devices 0' "$OUT/login-rocm_only.txt"
check "rocm_only: nvidia-smi still lists the GPU" grep -q '^GPU 0: ' "$OUT/login-rocm_only.txt"
check "back to both" site site-both-again --tags env

# 4. The facts and verify on their own (read-only).
check "facts.yml (fleet report) again" bash -c "ansible-playbook -i tests/device/inventory.yml playbooks/facts.yml -e '@$OUT/extra-vars.json' > '$OUT/facts.log' 2>&1"
check "verify alone" bash -c "ansible-playbook -i tests/device/inventory.yml site.yml --tags verify -e '@$OUT/extra-vars.json' > '$OUT/verify.log' 2>&1"

# 5. Uninstall, twice, and compare with the snapshot from before.
check "uninstall.yml" bash -c "ansible-playbook -i tests/device/inventory.yml playbooks/uninstall.yml -e '@$OUT/extra-vars.json' > '$OUT/uninstall-1.log' 2>&1"
check "uninstall.yml second run changed=0" bash -c "ansible-playbook -i tests/device/inventory.yml playbooks/uninstall.yml -e '@$OUT/extra-vars.json' > '$OUT/uninstall-2.log' 2>&1; grep -qE '^lent-gpu +: .*changed=0 .*failed=0' '$OUT/uninstall-2.log'"
snapshot "$OUT/snapshot-after.txt"
diff "$OUT/snapshot-before.txt" "$OUT/snapshot-after.txt" > "$OUT/snapshot-diff.txt"
check "after uninstall: /etc/apt, dpkg, profile.d, linker, adduser.conf, our paths, dotfiles as before" test ! -s "$OUT/snapshot-diff.txt"
check "python3-apt still absent at the end" bash -c '! dpkg -s python3-apt >/dev/null 2>&1'
# What lifecycle.md says stays: the user's group memberships (and apt's lists of the removed sources).
id "$GPU_USER" > "$OUT/groups-after.txt"; ls /var/lib/apt/lists > "$OUT/apt-lists-after.txt"
# No copy is kept of what matched (docs/device-runs.md): summary.txt says so, and the diffs are kept only when not empty.
if [ -s "$OUT/fleet-report-1.json" ] && cmp -s "$OUT/fleet-report-1.json" "$OUT/fleet-report/fleet-report.json"; then
  say "the second run's fleet report is the first's"; rm -f "$OUT/fleet-report-1.json" "$OUT/fleet-report-diff.txt"
else
  say "the second run's fleet report differs from the first's (fleet-report-1.json, fleet-report-diff.txt)"
fi
[ -s "$OUT/snapshot-diff.txt" ] || rm -f "$OUT/snapshot-after.txt" "$OUT/snapshot-diff.txt"
# Logs name the checkout's path, the wheels' folder (ansible-env.sh), the loopback port, home folders, the image's PyTorch venv and the Ubuntu archive
# the host cannot reach: placeholders for each (tests/release/test_committed_logs.py holds the committed copies to it).
sed -i -E "s#$PWD#<checkout>#g; s#$OUT#<out>#g; s#/tmp/site/#<wheels>/#g; s#127.0.0.1:$(cat /tmp/mirror.port)#127.0.0.1:PORT#g;
  s#/root/#~root/#g; s#/home/([a-z_][a-z0-9_-]*)#~\1#g; s#/opt/torch#<torch>#g; s#archive\.ubuntu\.com#UBUNTU-ARCHIVE#g" \
  "$OUT"/*.log "$OUT"/*.txt 2>/dev/null
cat "$OUT/summary.txt"
exit $failed
