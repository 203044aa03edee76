#!/usr/bin/env bash
# Capture what gpulab.rocm.node_probe reads on one host, as a planner test fixture (tests/unit/.../fixtures/probe).
# Usage: tests/tools/capture_probe.sh INVENTORY HOST OUT.json [MODULE_ARGS_JSON]
set -euo pipefail
inventory=$1 host=$2 out=$3 args=${4:-'{"users": ["alice", "bob"]}'}
ANSIBLE_LOAD_CALLBACK_PLUGINS=1 ANSIBLE_STDOUT_CALLBACK=ansible.posix.json \
  ansible -i "$inventory" "$host" -b -m gpulab.rocm.node_probe -a "$args" \
  | python3 -c '
import json, sys
reply = json.load(sys.stdin)
result = next(iter(reply["plays"][0]["tasks"][0]["hosts"].values()))
if result.get("failed"):
    sys.exit("probe failed: %s" % result.get("msg"))
node = result["ansible_facts"]["gpulab_node"]
json.dump(node, open(sys.argv[1], "w"), indent=1, sort_keys=True)
open(sys.argv[1], "a").write("\n")
' "$out"
echo "captured $out"
