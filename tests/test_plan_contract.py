"""The contract between the planner and the roles (module_utils/planning/planner.py CONTRACT, docs/plan-contract.md): every
key a role reads from a registered plan is declared for its phase, every declared key is read by a role, and the
plan module's RETURN is the table's (tests/tools/plan_return.py)."""

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import planner

ROOT = Path(__file__).resolve().parents[1]
ROLES = ROOT / "roles"


def _tasks(node):
    """Every task of a task file, blocks opened."""
    for task in node or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from _tasks(task.get(key))


def registered_plans():
    """{registered name: phase} of every gpulab.rocm.plan task in roles/, plus the vars that alias one of them."""
    names = {}
    for path in ROLES.glob("*/tasks/*.yml"):
        for task in _tasks(yaml.safe_load(path.read_text())):
            args = task.get("gpulab.rocm.plan")
            if isinstance(args, dict) and args.get("phase") and task.get("register"):
                names[task["register"]] = args["phase"]
    for path in ROLES.glob("*/vars/main.yml"):
        for name, value in (yaml.safe_load(path.read_text()) or {}).items():
            # "{{ __a if ... else __b }}": a name for whichever plan ran.
            whole = re.fullmatch(r"\{\{\s*(\w+) if .* else (\w+)\s*\}\}", str(value))
            if whole and {whole.group(1), whole.group(2)} <= set(names):
                names[name] = names[whole.group(1)]
    return names


def reads():
    """{(phase, key)} for every key a role reads from a registered plan, with where."""
    names = registered_plans()
    pattern = re.compile(r"\b(%s)(?:\.(\w+)|\[['\"](\w+)['\"]\])" % "|".join(map(re.escape, names)))
    # hostvars extracted by name: map('extract', hostvars, ['__rocm_slurm_node', 'node'])
    extract = re.compile(r"\[\s*'(%s)'\s*,\s*'(\w+)'\s*\]" % "|".join(map(re.escape, names)))
    found = {}
    for path in sorted(ROLES.rglob("*.yml")):
        text = path.read_text()
        for match in pattern.finditer(text):
            key = match.group(2) or match.group(3)
            found.setdefault((names[match.group(1)], key), []).append(str(path.relative_to(ROOT)))
        for match in extract.finditer(text):
            found.setdefault((names[match.group(1)], match.group(2)), []).append(str(path.relative_to(ROOT)))
    return found


def test_the_roles_register_plans_of_known_phases():
    names = registered_plans()
    assert names, "no plan task found under roles/"
    assert set(names.values()) <= set(planner.CONTRACT)


def test_every_key_a_role_reads_is_declared():
    undeclared = sorted("%s.%s (%s)" % (phase, key, ", ".join(sorted(set(where))))
                        for (phase, key), where in reads().items()
                        if key not in planner.COMMON_KEYS and key not in planner.CONTRACT[phase]["keys"])
    assert undeclared == [], "declare them in planner.CONTRACT: %s" % "; ".join(undeclared)


def test_every_declared_key_is_read_by_a_role():
    # Read by a role, by the gate (the plan action) for a phase that refuses by listing its problems, or by the
    # planner or the action themselves (read_by_plan: a notice's text, the figures recorded under stats_key).
    used = set(reads()) | set((phase, entry["gate"]) for phase, entry in planner.CONTRACT.items() if "gate" in entry)
    used |= set((phase, key) for phase, entry in planner.CONTRACT.items() for key in entry.get("read_by_plan", ()))
    unused = sorted("%s.%s" % (phase, key) for phase, entry in planner.CONTRACT.items() for key in entry["keys"]
                    if (phase, key) not in used)
    assert unused == [], "no role reads these declared keys (remove them from planner.CONTRACT): %s" % unused


def test_every_phase_reads_sections_the_probe_has():
    from ansible_collections.gpulab.rocm.plugins.modules import node_probe
    for phase, entry in planner.CONTRACT.items():
        assert entry["keys"] and set(entry["sections"]) <= set(node_probe.SECTIONS), phase


def test_the_plan_modules_return_is_generated_from_the_table():
    result = subprocess.run([sys.executable, str(ROOT / "tests" / "tools" / "plan_return.py"), "--check"],
                            capture_output=True, text=True, check=False)
    assert result.returncode == 0, result.stderr


@pytest.mark.parametrize("playbook", ["provision.yml", "uninstall.yml"])
def test_a_plan_pass_has_the_role_of_every_phase_it_plans_in_its_play_and_reads_its_inputs(playbook):
    # The pass plans in one task from each role's own inputs (docs/plan-contract.md): the role is in the play for its
    # variables (listed in its roles, or imported; tagged never where it must not run from there), and it declares
    # __<role>_wanted.
    # The play with the pass (uninstall.yml's first play takes the health check out of Slurm).
    play = next(play for play in yaml.safe_load((ROOT / "playbooks" / playbook).read_text())
                if any("gpulab.rocm.plan" in task for task in (play.get("pre_tasks") or []) + (play.get("tasks") or [])))
    tasks = (play.get("pre_tasks") or []) + (play.get("tasks") or [])
    passes = [task for task in tasks if "pass" in (task.get("gpulab.rocm.plan") or {})]
    assert len(passes) == 1 and passes[0]["tags"] == ["always"]
    roles = [planner.CONTRACT[phase]["role"] for phase in passes[0]["gpulab.rocm.plan"]["pass"]]
    in_play = [entry["role"] for entry in play.get("roles") or []]
    in_play += [task["ansible.builtin.import_role"]["name"] for task in tasks if "ansible.builtin.import_role" in task]
    assert set(roles) <= set(in_play), sorted(set(roles) - set(in_play))
    for role in roles:
        declared = yaml.safe_load((ROLES / role / "vars" / "main.yml").read_text())
        assert "__%s_wanted" % role in declared, role


def test_provision_imports_its_phases_once_in_order_and_applies_each_in_its_loop():
    play = yaml.safe_load((ROOT / "playbooks" / "provision.yml").read_text())[0]
    imports = [task for task in play["pre_tasks"] if "ansible.builtin.import_role" in task]
    listed = [task["ansible.builtin.import_role"]["name"] for task in imports]
    # For their variables only: no task of theirs runs there, not even Ansible's argument validation (each plan call
    # checks them); each named by its phase.
    assert all(task["tags"] == ["never"] and task["ansible.builtin.import_role"]["rolespec_validate"] is False
               for task in imports)
    planned = next(task for task in play["tasks"] if "gpulab.rocm.plan" in task)["gpulab.rocm.plan"]["pass"]
    assert [task["name"].split(":")[0].lower() for task in imports] == planned
    assert listed == [planner.CONTRACT[phase]["role"] for phase in planned]
    loop = next(task for task in play["tasks"] if "ansible.builtin.include_role" in task)
    assert loop["tags"] == ["always"]
    applied = [item["phase"] for item in loop["loop"]]
    # Every phase with a role to apply, in the pass's order; the maintenance around them (its drain, its finish).
    around = [phase for phase in planned if planner.CONTRACT[phase].get("applies") == "around"]
    roles = [phase for phase in planned if planner.CONTRACT[phase].get("applies", "role") == "role"]
    assert applied == around + roles + around
    for item in loop["loop"]:
        assert item["role"] == planner.CONTRACT[item["phase"]]["role"]
        assert item["tags"] == (["always"] if item["phase"] in around else [item["phase"]])
