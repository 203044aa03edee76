#!/usr/bin/env python3
"""Render the collection README's list of content (between markers): every module (its DOCUMENTATION), every
filter (its .yml DOCUMENTATION), every role (the top-level roles' meta/argument_specs.yml, which the release
tarball carries) and every playbook (playbooks/*.yml and site.yml, as the release tarball names them), so the
README cannot drift from them. `--check` exits 1 when the README is stale (run by the tests)."""

import ast
import re
import sys
from pathlib import Path

import yaml

import generated_block  # beside this file

ROOT = Path(__file__).resolve().parents[2]
COLLECTION = ROOT / "collections" / "ansible_collections" / "gpulab" / "rocm"
README = COLLECTION / "README.md"
BEGIN, END = "<!-- BEGIN collection content (tests/tools/collection_docs.py) -->", "<!-- END collection content -->"
MARKUP = re.compile(r"\b([CVOMIBEP])\(([^()]*)\)")


def text(value):
    """Ansible's documentation markup as Markdown, one table cell."""
    value = " ".join(value) if isinstance(value, list) else str(value)
    value = MARKUP.sub(lambda m: f"*{m.group(2)}*" if m.group(1) in "IB" else f"`{m.group(2)}`", value)
    return value.replace("|", "\\|").replace("\n", " ").rstrip(".")


def module_doc(path):
    for node in ast.parse(path.read_text()).body:
        if isinstance(node, ast.Assign) and getattr(node.targets[0], "id", None) == "DOCUMENTATION":
            return yaml.safe_load(node.value.value)
    raise ValueError(f"{path} has no DOCUMENTATION")


def modules():
    rows = []
    for path in sorted((COLLECTION / "plugins" / "modules").glob("*.py")):
        doc = module_doc(path)
        if doc["module"] != path.stem:
            raise ValueError(f"{path}: DOCUMENTATION names module {doc['module']}")
        action = (COLLECTION / "plugins" / "action" / path.name).is_file()
        summary = text(doc["short_description"])
        if doc.get("deprecated"):
            summary += ". Deprecated, removed in %s: %s" % (doc["deprecated"]["removed_in"],
                                                            text(doc["deprecated"]["alternative"]))
        rows.append((path.stem, " (action: runs on the controller)" if action else "", summary))
    return rows


def filters():
    rows = []
    for path in sorted((COLLECTION / "plugins" / "filter").glob("*.py")):
        doc = yaml.safe_load(path.with_suffix(".yml").read_text())["DOCUMENTATION"]
        names = re.findall(r"'([a-z_][a-z0-9_]*)':", path.read_text().split("def filters(self):", 1)[1])
        if names != [doc["name"]]:
            raise ValueError(f"{path}: filters {names}, documented {doc['name']}")
        rows.append((doc["name"], text(doc["short_description"])))
    return rows


def roles():
    rows = []
    for spec in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        main = yaml.safe_load(spec.read_text())["argument_specs"]["main"]
        rows.append((spec.parents[1].name, text(main["short_description"])))
    return rows


def plan_pass(tasks):
    """The phases of a play's plan pass (docs/plan-contract.md): its `gpulab.rocm.plan` task's `pass` list."""
    for task in tasks:
        phases = (task.get("gpulab.rocm.plan") or {}).get("pass")
        if phases:
            return phases
    return []


def applied_roles(play):
    """The roles a play applies: its `roles:` (but those tagged never, listed for their variables), then those its
    tasks import or include by name, and the roles of provision.yml's loop of phases."""
    names = [entry["role"] if isinstance(entry, dict) else entry for entry in play.get("roles", [])
             if not (isinstance(entry, dict) and entry.get("tags") == ["never"])]
    for task in play.get("tasks") or []:
        role = task.get("ansible.builtin.import_role") or task.get("ansible.builtin.include_role") or {}
        found = [item["role"] for item in task["loop"]] if isinstance(task.get("loop"), list) else [role.get("name")]
        names += [name for name in found if name and "{" not in name and name not in names]
    return names


def playbooks():
    """(name, plays): each play's name with the roles it runs or the playbook it imports, by collection names."""
    rows = []
    sources = sorted((ROOT / "playbooks").glob("*.yml")) + [ROOT / "site.yml"]
    for path in sorted(sources, key=lambda p: p.stem):
        plays = []
        for play in yaml.safe_load(path.read_text()):
            imported = play.get("ansible.builtin.import_playbook")
            if imported:
                what = "imports `gpulab.rocm.%s`" % Path(imported).stem
            else:
                what = "roles " + ", ".join(f"`{name}`" for name in applied_roles(play))
                planned = plan_pass((play.get("pre_tasks") or []) + (play.get("tasks") or []))
                if planned:
                    what = "plans " + ", ".join(f"`{phase}`" for phase in planned) + " first (the plan pass), then " + what
            plays.append(f"{text(play['name'])}: {what}")
        rows.append((path.stem, "; ".join(plays)))
    return rows


def render():
    out = ["### Modules", "", "| Module | What it does |", "|---|---|"]
    out += [f"| `gpulab.rocm.{name}`{note} | {desc} |" for name, note, desc in modules()]
    out += ["", "### Filters", "", "| Filter | What it does |", "|---|---|"]
    out += [f"| `gpulab.rocm.{name}` | {desc} |" for name, desc in filters()]
    out += ["", "### Roles (release tarball)", "", "In the project's checkout these are the top-level `roles/`.", "",
            "| Role | What it does |", "|---|---|"]
    out += [f"| `gpulab.rocm.{name}` | {desc} |" for name, desc in roles()]
    out += ["", "### Playbooks (release tarball)", "",
            "In the project's checkout these are `playbooks/*.yml` and `site.yml`.", "",
            "| Playbook | Plays |", "|---|---|"]
    out += [f"| `gpulab.rocm.{name}` | {plays} |" for name, plays in playbooks()]
    return "\n".join(out) + "\n"


if __name__ == "__main__":
    sys.exit(generated_block.main(README, BEGIN, END, render, "tests/tools/collection_docs.py", __doc__))
