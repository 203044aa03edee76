#!/usr/bin/env python3
"""Render the stack-wide inputs (module_utils/planning/stack.py) and each role's variables (meta/argument_specs.yml, with
the ranges and forms of meta/input_constraints.yml) into
docs/roles.md (between markers), so the page cannot drift from them. `--check` exits 1 when it is stale (run
by the tests)."""

import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "collections"))
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import role_spec, stack
import generated_block  # noqa: E402  (beside this file)

BEGIN, END = "<!-- BEGIN role variables (tests/tools/role_docs.py) -->", "<!-- END role variables -->"


def cell(value):
    return str(value).replace("|", "\\|").replace("\n", " ")


def render():
    out = ["### Stack-wide inputs", "",
           "Read by every role (through `gpulab.rocm.plan`); declared once, in the collection's "
           "`plugins/module_utils/planning/stack.py`.", "", "| Variable | Default | Description |", "|---|---|---|"]
    for name, default, description in stack.INPUTS:
        out.append(f"| `{name}` | `{default!r}` | {cell(description)} |")
    out.append("")
    for spec_file in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        role = spec_file.parents[1].name
        main = yaml.safe_load(spec_file.read_text())["argument_specs"]["main"]
        out += [f"### {role}", "", main["short_description"] + ".", "",
                "| Variable | Type | Default | Description |", "|---|---|---|---|"]
        constraints_file = spec_file.parent / role_spec.CONSTRAINTS_FILE
        constraints = (yaml.safe_load(constraints_file.read_text()) or {}).get("constraints") or {} \
            if constraints_file.exists() else {}
        for name, opt in main.get("options", {}).items():
            desc = opt.get("description", "")
            desc = " ".join(desc) if isinstance(desc, list) else desc
            checked = role_spec.describe(constraints.get(name) or {})
            desc += f" Checked: {checked}." if checked else ""
            default = opt.get("default", "(required)" if opt.get("required") else "")
            default = f"`{default}`" if default != "" else ""
            out.append(f"| `{name}` | {opt.get('type', 'str')} | {cell(default)} | {cell(desc)} |")
        out.append("")
    return "\n".join(out)


if __name__ == "__main__":
    sys.exit(generated_block.main(ROOT / "docs" / "roles.md", BEGIN, END, render, "tests/tools/role_docs.py", __doc__))
