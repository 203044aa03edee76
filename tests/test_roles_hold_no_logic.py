"""Decisions live in module_utils, Jinja only wires values (issue 19): no role holds a Jinja expression spread over
several lines, and no role names a ROCm release outside its defaults (the stack-wide rocm_version decides)."""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RELEASE = re.compile(r"\b[5-9]\.[0-9]\.[0-9]\b")


def test_no_role_holds_a_multi_line_jinja_expression():
    found = []
    for path in sorted((ROOT / "roles").rglob("*.yml")):
        text = path.read_text()
        for match in re.finditer(r"\{\{.*?\}\}|\{%.*?%\}", text, re.S):
            if "\n" in match.group(0):
                found.append("%s:%d" % (path.relative_to(ROOT), text[:match.start()].count("\n") + 1))
    assert found == [], "move the logic into the phase's plan (module_utils/plan_*.py): %s" % found


def test_no_role_names_a_rocm_release_outside_its_defaults():
    found = []
    for path in sorted((ROOT / "roles").rglob("*")):
        if not path.is_file() or path.suffix not in (".yml", ".j2") or "defaults" in path.parts:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if RELEASE.search(line) and not line.lstrip().startswith("#"):
                found.append("%s:%d: %s" % (path.relative_to(ROOT), number, line.strip()))
    assert found == [], found
