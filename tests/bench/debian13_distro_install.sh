#!/usr/bin/env bash
# Debian 13's own ROCm packages installed for real with the role's default list (rocm_install_source: distro), on a
# fresh Debian 13 container from Debian's archive: about 316 MB downloaded and 3 GB unpacked (librocblas0 alone is
# 2.2 GB), too much for the test command's budget, where the distro scenario installs a shorter list and resolves
# the default one with apt's simulation (docs/releases.md). Run by hand; the figures go into docs/lifecycle.md.
# Then the same packages by raw commands (apt-get update and one apt-get install of exactly what site.yml asked for)
# in another fresh container, and a second pair (site.yml cold, raw commands) on fresh containers, so that each side
# has a run after the archive's caches were warm: the cold/raw ratio with real package sizes (docs/performance.md).
#   tests/bench/debian13_distro_install.sh OUTDIR
# Needs the test command's set-up (the gpulab/debian:trixie image, the venv) and Debian's archive; about 12 GB of
# disk while it runs.
set -euo pipefail
out=${1:?usage: $0 OUTDIR}
root=$(cd "$(dirname "$0")/../.." && pwd)
name=gpulab-distro-install
mkdir -p "$out"
fresh() { docker rm -f "$1" >/dev/null 2>&1 || true
          docker run -d --name "$1" --hostname "$1" --network host gpulab/debian:trixie sleep infinity >/dev/null; }
fresh "$name"
trap 'docker rm -f "$name" $name-raw1 $name-raw2 $name-again >/dev/null 2>&1' EXIT
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
sync
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

# The raw floor: the packages site.yml asked for (apt marks them manual), installed by name in a fresh container.
# Each timed install runs with no other container of gigabytes beside it and after a sync: measured here, an apt-get
# install took 19 s alone and 58 to 62 s beside a container that held the same 3 GB.
packages() { docker exec "$1" dpkg-query -W -f '${Package}=${Version}\n' | sort > "$out/$1.packages"; }
fresh $name-raw1
wanted=$(comm -13 <(docker exec $name-raw1 apt-mark showmanual | sort) <(docker exec "$name" apt-mark showmanual | sort) \
  | tr '\n' ' ')
packages "$name"
docker rm -f "$name" >/dev/null
raw() {  # raw CONTAINER: apt-get update, then one apt-get install, each timed (site.yml refreshes the distribution's
         # lists only where they are older than rocm_sdk_cache_valid_time, and the image's are fresh)
  local start updated; sync; start=$(date +%s.%N)
  docker exec "$1" apt-get update -qq > "$out/$1.log" 2>&1
  updated=$(date +%s.%N)
  docker exec -e DEBIAN_FRONTEND=noninteractive "$1" apt-get install -y -qq --no-install-recommends $wanted \
    >> "$out/$1.log" 2>&1
  echo "raw commands in $1: apt-get update $(echo "$updated - $start" | bc) s, apt-get install" \
    "$(echo "$(date +%s.%N) - $updated" | bc) s, for: $wanted" | tee -a "$out/summary.txt"
  packages "$1"
  docker rm -f "$1" >/dev/null
}
same() {  # same SITE RAW: whether the two package sets are equal; the raw side's list is kept only where not
  if cmp -s "$out/$1.packages" "$out/$2.packages"; then rm -f "$out/$2.packages"; echo equal; else echo differ; fi; }
raw $name-raw1
echo "package sets of site.yml's container and the raw one: $(same "$name" $name-raw1)" | tee -a "$out/summary.txt"
# The second pair, the archive's caches warm for both.
fresh $name-again
sed "s/$name:/$name-again:/" "$out/hosts.yml" > "$out/hosts-again.yml"
ansible-playbook -i "$out/hosts-again.yml" molecule/shared/prepare.yml > "$out/prepare-again.log" 2>&1
sync
start=$(date +%s.%N)
ansible-playbook -i "$out/hosts-again.yml" site.yml > "$out/site-again.log" 2>&1
echo "site.yml cold again on $name-again: $(echo "$(date +%s.%N) - $start" | bc) s; $(grep -E "^$name-again +: ok=" \
  "$out/site-again.log")" | tee -a "$out/summary.txt"
packages $name-again
docker rm -f $name-again >/dev/null
fresh $name-raw2
raw $name-raw2
echo "package sets of site.yml's container and the raw one: $(same $name-again $name-raw2)" | tee -a "$out/summary.txt"
sed -i -E "s#$root#<checkout>#g; s#$out#<out>#g; s#/home/([a-z_][a-z0-9_-]*)#~\1#g" "$out"/*.log "$out"/*.txt \
  "$out/hosts.yml"
# The two raw installs print the same lines where nothing went differently: one copy is kept.
if cmp -s "$out/$name-raw1.log" "$out/$name-raw2.log"; then rm -f "$out/$name-raw2.log"; fi
