#!/usr/bin/env python3
"""Where one ansible-playbook run's controller CPU goes: the main process (loading the playbook, the strategy, the
callbacks), each task's worker process, and the workers' children (docker exec clients). Figures, not assertions.

  tests/bench/task_cpu.py [--top N] -- ARGS...     runs `ansible-playbook ARGS...` and prints the split and the
                                                   tasks whose workers took the most CPU

The run's own output goes to stderr unchanged. The hook (task_cpu_hook/sitecustomize.py) wraps Ansible's worker
entry point, so the figures are those of the ansible-core in the venv.
"""

import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HOOK = Path(__file__).resolve().parent / "task_cpu_hook"


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--top", type=int, default=15, help="tasks to list, most CPU first")
    parser.add_argument("args", nargs=argparse.REMAINDER, help="ansible-playbook's arguments (after --)")
    options = parser.parse_args()
    args = options.args[1:] if options.args[:1] == ["--"] else options.args
    with tempfile.NamedTemporaryFile(prefix="gpulab-task-cpu-", suffix=".jsonl", delete=False) as handle:
        out = handle.name
    env = dict(os.environ, GPULAB_TASK_CPU=out,
               PYTHONPATH=os.pathsep.join(filter(None, [str(HOOK), os.environ.get("PYTHONPATH")])))
    started = time.monotonic()
    # The venv's ansible-playbook (beside this Python), else the one on PATH.
    beside = Path(sys.executable).parent / "ansible-playbook"
    command = str(beside) if beside.exists() else "ansible-playbook"
    proc = subprocess.run([command] + args, env=env, stdout=sys.stderr, check=False)
    wall = time.monotonic() - started
    records = [json.loads(line) for line in Path(out).read_text().splitlines()]
    os.unlink(out)
    tasks = [r for r in records if "task" in r]
    main_record = next((r for r in records if "main" in r), {"main": 0.0, "all_children": 0.0})
    workers = sum(r["worker"] for r in tasks)
    clients = sum(r["children"] for r in tasks)
    print("rc %d, %.2f s wall, %d tasks; controller CPU %.2f s: main process %.2f s, workers %.2f s, "
          "their children %.2f s, other children %.2f s" % (
              proc.returncode, wall, len(tasks), main_record["main"] + main_record["all_children"],
              main_record["main"], workers, clients, main_record["all_children"] - workers - clients))
    by_name = collections.OrderedDict()
    for record in tasks:
        entry = by_name.setdefault(record["task"], [0, 0.0])
        entry[0] += 1
        entry[1] += record["worker"] + record["children"]
    for name, (count, cpu) in sorted(by_name.items(), key=lambda item: -item[1][1])[:options.top]:
        print("%6.3f s  %2d×  %s" % (cpu, count, name))
    return proc.returncode


if __name__ == "__main__":
    sys.exit(main())
