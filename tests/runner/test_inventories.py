"""Every variable the inventories set is one the project reads: a role option (meta/argument_specs.yml), a
stack-wide input (module_utils/planning/stack.py), a variable playbooks read with a default (`gpulab_serial | default(0)`), a
connection variable, or the test fixture's profile. A misspelt variable in group_vars is otherwise silently ignored."""

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import stack

ROOT = Path(__file__).resolve().parents[2]
INVENTORIES = ["inventories/lab/hosts.yml", "inventories/local/hosts.yml", "tests/runner/inventory",
               "tests/runner/ee/inventory"]
# Set by tests/harness and molecule/shared/prepare.yml for the fake GPU tools, not by the product.
FIXTURE_VARS = {"gpulab_fixture_profile"}


def known_variables():
    names = set(FIXTURE_VARS) | set(stack.DEFAULTS)
    for spec in ROOT.glob("roles/*/meta/argument_specs.yml"):
        names.update(yaml.safe_load(spec.read_text())["argument_specs"]["main"].get("options", {}))
    # Variables read with a default by role defaults and playbooks: rocm_version, gpulab_hosts, ...
    for path in list(ROOT.glob("roles/*/defaults/main.yml")) + list(ROOT.glob("playbooks/*.yml")):
        names.update(re.findall(r"\b([a-z_][a-z0-9_]*) \| default\(", path.read_text()))
    return names


def inventory_variables(inventory):
    listed = json.loads(subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(ROOT / inventory), "--list", "--export"],
        check=True, capture_output=True, text=True, cwd=str(ROOT)).stdout)
    found = {}
    for host, variables in listed["_meta"]["hostvars"].items():
        for name in variables:
            found.setdefault(name, host)
    for group, body in listed.items():
        for name in (body.get("vars") or {}) if isinstance(body, dict) else {}:
            found.setdefault(name, "group " + group)
    return found


@pytest.mark.parametrize("inventory", INVENTORIES)
def test_inventory_variables_are_read_somewhere(inventory):
    known = known_variables()
    unknown = {name: where for name, where in inventory_variables(inventory).items()
               if name not in known and not name.startswith("ansible_")}
    assert unknown == {}, "%s sets variables nothing reads: %s" % (inventory, unknown)


def test_lab_groups_are_gpu_families():
    listed = json.loads(subprocess.run(
        [str(Path(sys.executable).parent / "ansible-inventory"), "-i", str(ROOT / INVENTORIES[0]), "--list"],
        check=True, capture_output=True, text=True, cwd=str(ROOT)).stdout)
    assert set(listed["rocm_nodes"]["children"]) == {"mi200_nodes", "mi300_nodes", "navi_workstations", "build_nodes"}
    hostvars = listed["_meta"]["hostvars"]
    # Family settings reach their hosts, and a family can hold the release back.
    assert hostvars["gpu-node-11.lab.example"]["rocm_expected_gpu_count"] == 8
    assert hostvars["ws-navi-01.lab.example"]["rocm_version"] == "7.2.4"
    assert hostvars["gpu-node-01.lab.example"]["rocm_version"] == "10.1.0"
    assert hostvars["ws-navi-02.lab.example"]["rocm_gpu_users"] == ["dave", "erin"]
