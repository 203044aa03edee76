"""A generated block of a Markdown file, between a BEGIN and an END marker line: written anew, or checked (the
tools that keep the READMEs' tables in step with the code share this)."""

import argparse
import sys


def main(path, begin, end, render, tool, description):
    """Replace the block of path between begin and end with render(); with --check, exit 1 when it differs."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--check", action="store_true", help="fail when the block is stale; write nothing")
    args = parser.parse_args()
    text = path.read_text()
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    new = f"{head}{begin}\n{render()}{end}{tail}"
    if args.check:
        if new != text:
            print(f"{path.name}'s generated block is stale: run {tool}", file=sys.stderr)
            return 1
        return 0
    path.write_text(new)
    return 0
