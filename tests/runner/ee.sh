#!/usr/bin/env bash
# The execution environment built and run the way AWX runs it (part of the awx-runner lane: tests/runner/run.sh).
#   tests/runner/ee.sh [--keep] [--jobs provision,provision-again,facts,navigator]
# 1. The image gpulab/rocm-ee:<version> from tests/ee/Containerfile (tests/ee/build.py: built only when its recipe
#    changed; the lane's first run on a machine pays the build).
# 2. Meanwhile the node: container gpulab-ee-node (Debian 12) with sshd on 127.0.0.1:22301, its admin `ops` with sudo
#    and the lab key (molecule/shared/ssh_lab.yml, keys in .cache/runner/ee/ssh), its users and fixture GPU
#    (molecule/shared/prepare.yml), all through docker exec (tests/runner/ee/prepare.yml); its host key read the same
#    way into known_hosts.
# 3. The jobs (tests/runner/ee_jobs.py), which reach the node only over SSH from inside the image's container:
#    provision (rc 0, successful, no failure in the recap, rocm_verify_nodes in the set_stats artifacts),
#    provision-again as an arbitrary UID (changed=0), facts (rocm_report_nodes in the artifacts equals the fleet
#    report that came back in the artifacts folder), and the provision job through ansible-navigator (changed=0).
# Uses the fixture mirror of the environment (GPULAB_MIRROR_URL...), or starts the runner lane's own. The node is
# removed at the end unless --keep; the image stays (it is the cache). Private data dirs stay in .cache/runner/ee/.
set -euo pipefail
cd "$(dirname "$0")/../.."

keep=false
jobs_args=()
while [ $# -gt 0 ]; do
  case $1 in
    --keep) keep=true ;;
    --jobs) jobs_args=(--jobs "$2"); shift ;;
    *) echo "usage: $0 [--keep] [--jobs LIST]" >&2; exit 2 ;;
  esac
  shift
done

if [ -z "${VIRTUAL_ENV:-}" ]; then
  # Alone (not under run.sh): the venv, the Docker engine and the Debian 12 base image, made only where missing.
  tests/harness/host-setup.sh base
  tests/harness/base-images.sh bookworm
  # shellcheck disable=SC1091
  source .venv/bin/activate
fi
started_mirror=false
if [ -z "${GPULAB_MIRROR_URL:-}" ]; then
  export GPULAB_MIRROR_STATE=$PWD/.cache/mirror-runner
  tests/harness/mirror/mirror.sh start >/dev/null
  eval "$(tests/harness/mirror/mirror.sh env)"
  started_mirror=true
fi

node=gpulab-ee-node
work=$PWD/.cache/runner/ee
export GPULAB_SSH_LAB_KEYS=$work/ssh
# shellcheck disable=SC2329  # run by the EXIT trap
cleanup() {
  if [ "$keep" = false ]; then
    docker rm -f "$node" >/dev/null 2>&1 || true
    if [ "$started_mirror" = true ]; then tests/harness/mirror/mirror.sh stop >/dev/null; fi
  fi
}
trap cleanup EXIT
mkdir -p "$work"

start=$SECONDS
# The image builds (or is found cached) while the node is prepared.
python3 tests/ee/build.py >"$work/image" 2>"$work/build.log" &
build_pid=$!

docker rm -f "$node" >/dev/null 2>&1 || true
docker run -d --name "$node" --network host --hostname "$node" gpulab/debian:bookworm sleep infinity >/dev/null
inventory=tests/runner/ee/inventory
ansible-playbook -i "$inventory" tests/runner/ee/prepare.yml >"$work/prepare.log"
port=$(python3 -c 'import sys, yaml; print(yaml.safe_load(open(sys.argv[1]))["all"]["children"]["rocm_nodes"]["hosts"][sys.argv[2]]["ansible_port"])' \
  "$inventory/hosts.yml" "$node")
printf '[127.0.0.1]:%s %s\n' "$port" "$(docker exec "$node" cat /etc/ssh/ssh_host_ed25519_key.pub | cut -d' ' -f1,2)" \
  >"$work/known_hosts"
echo "ee: node $node prepared in $((SECONDS - start)) s"

wait "$build_pid" || { cat "$work/build.log" >&2; exit 1; }
grep -v Deprecation "$work/build.log" | grep '^\[ee\]' || true
image=$(cat "$work/image")
echo "ee: image $image ready after $((SECONDS - start)) s"

status=0
python3 tests/runner/ee_jobs.py "$image" "$work" --known-hosts "$work/known_hosts" "${jobs_args[@]}" || status=1
echo "ee: done in $((SECONDS - start)) s"
exit $status
