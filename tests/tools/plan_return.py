#!/usr/bin/env python3
"""Render the RETURN documentation of the gpulab.rocm.plan module from the planner's contract table
(module_utils/planning/planner.py CONTRACT and COMMON_KEYS), between markers in plugins/modules/plan.py, so that
`ansible-doc gpulab.rocm.plan` shows every key a role may read. `--check` exits 1 when it is stale (run by the
tests)."""

import sys
from pathlib import Path

import yaml

import generated_block  # beside this file

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import planner

MODULE = ROOT / "collections" / "ansible_collections" / "gpulab" / "rocm" / "plugins" / "modules" / "plan.py"
BEGIN = "# BEGIN generated from planner.CONTRACT (tests/tools/plan_return.py)"
END = "# END generated"
COMMON_TYPES = {"phase": "str", "changes": "list", "notices": "list", "stack": "dict", "msg": "str",
                "planned_in": "str", "refused": "list"}


def render():
    keys = {}
    for name, doc in planner.COMMON_KEYS.items():
        keys[name] = {"description": doc, "returned": "always" if name not in ("planned_in", "refused")
                      else "when it applies (see the description)", "type": COMMON_TYPES[name]}
        if COMMON_TYPES[name] == "list":
            keys[name]["elements"] = "dict" if name == "changes" else "str"
    shared = {}
    for phase, entry in planner.CONTRACT.items():
        for name, doc in entry["keys"].items():
            shared.setdefault(name, []).append((phase, doc))
    for name in sorted(shared):
        phases = shared[name]
        keys[name] = {
            "description": ["Phase %s: %s" % (phase, doc) for phase, doc in phases],
            "returned": "for the phase%s %s" % ("s" if len(phases) > 1 else "", ", ".join(p for p, _ in phases)),
            # One name may hold a list in one phase and a dict in another (packages: slurm_node, sdk).
            "type": "raw",
        }
    return yaml.safe_dump(keys, sort_keys=False, width=110, default_flow_style=False)


if __name__ == "__main__":
    sys.exit(generated_block.main(MODULE, BEGIN, END, render, "tests/tools/plan_return.py",
                                  __doc__.splitlines()[0]))
