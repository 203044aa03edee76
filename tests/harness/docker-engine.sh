#!/usr/bin/env bash
# Make sure a Docker engine answers on this machine: install Debian's docker.io if missing, start dockerd without
# touching the host's networking (containers use network_mode: host), and wait until it answers.
set -euo pipefail

log() { printf '[docker-engine] %s\n' "$*" >&2; }

if ! command -v dockerd >/dev/null 2>&1; then
  log "installing docker.io from Debian"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq docker.io >/dev/null
fi

if docker info >/dev/null 2>&1; then
  exit 0
fi

log "starting dockerd"
mkdir -p /var/log
setsid dockerd --bridge=none --iptables=false --ip6tables=false >/var/log/gpulab-dockerd.log 2>&1 < /dev/null &

for _ in $(seq 1 60); do
  if docker info >/dev/null 2>&1; then
    log "dockerd is up"
    exit 0
  fi
  sleep 1
done
log "dockerd did not answer within 60 s; see /var/log/gpulab-dockerd.log"
tail -n 20 /var/log/gpulab-dockerd.log >&2 || true
exit 1
