#!/usr/bin/env python3
"""Render each role's variables from meta/argument_specs.yml into README.md (between markers), so the README
cannot drift from the specs. `--check` exits 1 when the README is stale (run by the tests)."""

import argparse
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[2]
BEGIN, END = "<!-- BEGIN role variables (tests/tools/role_docs.py) -->", "<!-- END role variables -->"


def cell(value):
    return str(value).replace("|", "\\|").replace("\n", " ")


def render():
    out = []
    for spec_file in sorted(ROOT.glob("roles/*/meta/argument_specs.yml")):
        role = spec_file.parents[1].name
        main = yaml.safe_load(spec_file.read_text())["argument_specs"]["main"]
        out += [f"### {role}", "", main["short_description"] + ".", "",
                "| Variable | Type | Default | Description |", "|---|---|---|---|"]
        for name, opt in main.get("options", {}).items():
            desc = opt.get("description", "")
            desc = " ".join(desc) if isinstance(desc, list) else desc
            default = opt.get("default", "(required)" if opt.get("required") else "")
            default = f"`{default}`" if default != "" else ""
            out.append(f"| `{name}` | {opt.get('type', 'str')} | {cell(default)} | {cell(desc)} |")
        out.append("")
    return "\n".join(out)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    readme = ROOT / "README.md"
    text = readme.read_text()
    head, rest = text.split(BEGIN, 1)
    _, tail = rest.split(END, 1)
    new = f"{head}{BEGIN}\n{render()}{END}{tail}"
    if args.check:
        if new != text:
            print("README.md's role variables are stale: run tests/tools/role_docs.py", file=sys.stderr)
            return 1
        return 0
    readme.write_text(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
