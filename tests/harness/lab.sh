#!/usr/bin/env bash
# The built-in local lab: Debian 12 and 13 containers standing in for GPU nodes, the fixture ROCm mirror standing in
# for AMD's repository, and site.yml run against them exactly as against a real cluster: over SSH, as an admin
# account with sudo.
#   tests/harness/lab.sh up     build/start everything, run site.yml, print a per-host summary (run it again: changed=0)
#   tests/harness/lab.sh down   remove the containers, stop the mirror
set -euo pipefail
cd "$(dirname "$0")/../.."

inventory=inventories/local/hosts.yml
# The SSH lab's key pair and known_hosts (inventories/local/hosts.yml, molecule/shared/ssh_lab.yml).
export GPULAB_SSH_LAB_KEYS=$PWD/.cache/lab/ssh
nodes=(gpulab-node-bookworm gpulab-node-trixie)

up() {
  tests/harness/host-setup.sh
  # shellcheck disable=SC1091
  source .venv/bin/activate
  tests/harness/mirror/mirror.sh start
  eval "$(tests/harness/mirror/mirror.sh env)"
  for node in "${nodes[@]}"; do
    if [ -z "$(docker ps -q --filter "name=^${node}$")" ]; then
      docker rm -f "$node" >/dev/null 2>&1 || true
      docker run -d --name "$node" --network host --hostname "$node" "gpulab/debian:${node##*-}" sleep infinity >/dev/null
      echo "lab: started container $node"
    fi
  done
  # Test fixture only: sshd and the admin account in each container (through docker exec), then, over SSH, the lab's
  # users and the GPU each container pretends to have.
  ansible-playbook -i "$inventory" molecule/shared/ssh_lab.yml >/dev/null
  ansible-playbook -i "$inventory" molecule/shared/prepare.yml >/dev/null
  start=$SECONDS
  ansible-playbook -i "$inventory" site.yml
  echo "lab: site.yml took $((SECONDS - start)) s"
  ansible-playbook -i "$inventory" tests/harness/lab-summary.yml
}

down() {
  docker rm -f "${nodes[@]}" >/dev/null 2>&1 || true
  tests/harness/mirror/mirror.sh stop
}

case ${1:-} in
  up) up ;;
  down) down ;;
  *) echo "usage: $0 up|down" >&2; exit 2 ;;
esac
