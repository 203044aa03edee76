#!/usr/bin/env bash
# Debian 13's own ROCm packages installed for real with the role's default list (rocm_install_source: distro), on a
# fresh Debian 13 container from Debian's archive: about 316 MB downloaded and 3 GB unpacked (librocblas0 alone is
# 2.2 GB), too much for the test command's budget, where the distro scenario installs a shorter list and resolves
# the default one with apt's simulation (docs/releases.md). Run by hand; the figures go into docs/releases.md.
#   tests/bench/debian13_distro_install.sh OUTDIR
# Needs the test command's set-up (the gpulab/debian:trixie image, the venv) and Debian's archive.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
name=gpulab-distro-install
mkdir -p "$out"
docker rm -f "$name" >/dev/null 2>&1 || true
docker run -d --name "$name" --hostname "$name" --network host gpulab/debian:trixie sleep infinity >/dev/null
trap 'docker rm -f "$name" >/dev/null 2>&1' EXIT
cat > "$out/hosts.yml" <<INV
---
all:
  children:
    rocm_nodes:
      hosts:
        $name: {gpulab_fixture_profile: no-gpu}
      vars:
        ansible_connection: community.docker.docker
        ansible_python_interpreter: /usr/bin/python3
        rocm_install_source: distro
        rocm_expected_gpu_count: 0
        rocm_preflight_gpus_required: false
        rocm_gpu_users: [alice]
        rocm_report_dest: $out/fleet-report
INV
export ANSIBLE_CONFIG=$root/ansible.cfg ANSIBLE_ROLES_PATH=$root/roles ANSIBLE_COLLECTIONS_PATH=$root/collections
cd "$root"
ansible-playbook -i "$out/hosts.yml" molecule/shared/prepare.yml > "$out/prepare.log" 2>&1
for run in 1 2; do
  start=$(date +%s)
  rc=0
  ansible-playbook -i "$out/hosts.yml" site.yml > "$out/site-$run.log" 2>&1 || rc=$?
  echo "site.yml run $run: rc=$rc in $(( $(date +%s) - start )) s; $(grep -E "^$name +: ok=" "$out/site-$run.log")" \
    | tee -a "$out/summary.txt"
  [ "$rc" = 0 ] || exit 1
done
docker exec "$name" bash -c 'dpkg-query -W -f "\${Package} \${Version} \${Installed-Size}\n" hipcc libamdhip64-dev \
  librocblas-dev librocblas0 rocminfo rocm-smi amd-smi; du -sh /usr/lib/x86_64-linux-gnu/rocblas 2>/dev/null; \
  hipcc --version 2>&1 | head -3; rocminfo 2>&1 | tail -3; echo "python3-apt: $(dpkg -s python3-apt >/dev/null 2>&1 && echo present || echo absent)"' \
  > "$out/installed.txt" 2>&1
cat "$out/installed.txt" >> "$out/summary.txt"
sed -i "s#$root#<checkout>#g; s#$out#<out>#g" "$out"/*.log "$out"/*.txt "$out/hosts.yml"
