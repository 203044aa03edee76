"""Decisions live in module_utils, Jinja only wires values (issue 19): no role holds a Jinja expression spread over
several lines, and no role names a ROCm release outside its defaults (the stack-wide rocm_version decides). A
playbook only wires values too (issue 36): which hosts, which roles, what it gives them; no Jinja over several lines
there either (site.yml and playbooks/, AWX's included)."""

import os
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELEASE = re.compile(r"\b[5-9]\.[0-9]\.[0-9]\b")


def _yaml_files(folder):
    """The YAML files under folder, not through its links (playbooks/roles and playbooks/collections lead to the roles
    and the collection)."""
    found = []
    for top, _, names in os.walk(folder):
        found += [Path(top) / name for name in names if name.endswith((".yml", ".yaml"))]
    return sorted(found)


def _multi_line_expressions(paths):
    found = []
    for path in paths:
        text = path.read_text()
        for match in re.finditer(r"\{\{.*?\}\}|\{%.*?%\}", text, re.S):
            if "\n" in match.group(0):
                found.append("%s:%d" % (path.relative_to(ROOT), text[:match.start()].count("\n") + 1))
    return found


def test_no_role_holds_a_multi_line_jinja_expression():
    found = _multi_line_expressions(_yaml_files(ROOT / "roles"))
    assert found == [], "move the logic into the phase's plan (module_utils/plan_*.py): %s" % found


def test_no_playbook_holds_a_multi_line_jinja_expression():
    paths = [ROOT / "site.yml"] + _yaml_files(ROOT / "playbooks")
    assert ROOT / "playbooks" / "upgrade.yml" in paths and not any("roles" in p.relative_to(ROOT).parts for p in paths)
    found = _multi_line_expressions(paths)
    assert found == [], ("a playbook wires values: move the decision into the role it feeds (a computed value in its "
                         "vars/main.yml, its defaults, or its plan in module_utils): %s" % found)


def test_no_role_names_a_rocm_release_outside_its_defaults():
    found = []
    for path in sorted((ROOT / "roles").rglob("*")):
        if not path.is_file() or path.suffix not in (".yml", ".j2") or "defaults" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if RELEASE.search(line) and not line.lstrip().startswith("#"):
                found.append("%s:%d: %s" % (path.relative_to(ROOT), number, line.strip()))
    assert found == [], found
