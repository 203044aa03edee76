#!/usr/bin/env bash
# Every playbook run the way AWX runs it: ansible-runner with a private data dir (project/, inventory/hosts,
# env/envvars with AWX-style ANSIBLE_ROLES_PATH / ANSIBLE_COLLECTIONS_PATH, env/extravars), against five Debian
# 12/13 containers with different fixture GPUs, then the fleet report opened in headless Chromium; then the
# execution environment's image built and its jobs run the way AWX runs them (tests/runner/ee.sh).
#   tests/runner/run.sh [--keep] [--jobs provision,drift,...] [--ee-jobs LIST|none]
#   (jobs: tests/runner/awx_jobs.py; EE jobs: tests/runner/ee_jobs.py)
# Containers gpulab-runner-* and gpulab-ee-node; its own fixture mirror (state .cache/mirror-runner); removed at the
# end unless --keep (the image gpulab/rocm-ee:<version> stays: it is the cache). The private data dirs, the report and
# its screenshot stay in .cache/runner/.
set -euo pipefail
cd "$(dirname "$0")/../.."

keep=false
jobs_args=()
ee_args=()
ee=true
while [ $# -gt 0 ]; do
  case $1 in
    --keep) keep=true; ee_args+=(--keep) ;;
    --jobs) jobs_args=(--jobs "$2"); shift ;;
    --ee-jobs) if [ "$2" = none ]; then ee=false; else ee_args+=(--jobs "$2"); fi; shift ;;
    *) echo "usage: $0 [--keep] [--jobs LIST] [--ee-jobs LIST|none]" >&2; exit 2 ;;
  esac
  shift
done

# The venv and the base images (the jobs need no PyTorch on this machine).
tests/harness/host-setup.sh base images
# shellcheck disable=SC1091
source .venv/bin/activate
export GPULAB_MIRROR_STATE=$PWD/.cache/mirror-runner
tests/harness/mirror/mirror.sh start
eval "$(tests/harness/mirror/mirror.sh env)"

inventory=tests/runner/inventory
mapfile -t nodes < <(ansible-inventory -i "$inventory" --list | python3 -c \
  'import json, sys; print("\n".join(sorted(json.load(sys.stdin)["rocm_nodes"]["hosts"])))')
cleanup() {
  if [ "$keep" = false ]; then
    docker rm -f "${nodes[@]}" >/dev/null 2>&1 || true
    tests/harness/mirror/mirror.sh stop >/dev/null
  fi
}
trap cleanup EXIT

start=$SECONDS
images=(bookworm trixie)
for i in "${!nodes[@]}"; do
  docker rm -f "${nodes[$i]}" >/dev/null 2>&1 || true
  docker run -d --name "${nodes[$i]}" --network host --hostname "${nodes[$i]}" \
    "gpulab/debian:${images[$((i % 2))]}" sleep infinity >/dev/null
done
echo "runner: started ${nodes[*]} in $((SECONDS - start)) s"

# Test fixture only, not an AWX job: the lab's users, the GPU each container pretends to have, and the sysfs tree
# of four downtrained MI50s on gpulab-runner-5.
ansible-playbook -i "$inventory" -l rocm_nodes molecule/shared/prepare.yml >/dev/null
sysfs=$(mktemp -d)
python3 collections/ansible_collections/gpulab/rocm/tests/unit/sysfs_tree.py \
  tests/report/sysfs/mi50-4x-downtrained-no-driver.json "$sysfs/sysfs"
docker exec gpulab-runner-5 mkdir -p /opt/gpulab-fixture
docker cp "$sysfs/sysfs" gpulab-runner-5:/opt/gpulab-fixture/sysfs
rm -rf "$sysfs"

pdd=.cache/runner/pdd
mkdir -p .cache/runner
status=0
python3 tests/runner/awx_jobs.py "$pdd" "${jobs_args[@]}" || status=1

# The report of the facts job, in a browser (also when another job failed).
if [ -f "$pdd/fleet-report/fleet-report.html" ]; then
  python3 tests/report/check_report.py "$pdd/fleet-report" --expect-hosts "$(IFS=,; echo "${nodes[*]}")" \
    --screenshot .cache/runner/fleet-report.png || status=1
fi
echo "runner: AWX-style jobs done in $((SECONDS - start)) s"

# The execution environment: its image (built only when its recipe changed) and jobs through it, on a node of its
# own reached over SSH; the same fixture mirror.
if [ "$ee" = true ]; then
  ee_start=$SECONDS
  tests/runner/ee.sh "${ee_args[@]}" || status=1
  echo "runner: execution environment done in $((SECONDS - ee_start)) s"
fi
echo "runner: done in $((SECONDS - start)) s"
exit $status
