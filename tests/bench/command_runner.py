#!/usr/bin/env python3
"""ansible-core's AnsibleModule.run_command against the collection's process_run, side by side, on the command the
probe runs most: a program under coreutils' timeout. Figures, not assertions (docs/performance.md).

  tests/bench/command_runner.py [--runs N]

run_command waits a whole second more when the process exits between its two checks after both pipes closed;
coreutils' timeout closes them before it exits, so some runs take a second longer. process_run
(module_utils/parsers/_facts_common.py, what node_probe and the facts modules run) reads through subprocess.communicate.
"""

import argparse
import json
import shutil
import statistics
import time

from ansible.module_utils import basic

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import process_run


def timed(run, argv, runs):
    seconds = []
    for _ in range(runs):
        started = time.monotonic()
        run(argv)
        seconds.append(time.monotonic() - started)
    return seconds


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=500, help="runs of each")
    args = parser.parse_args()
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": {}}).encode()
    basic._ANSIBLE_PROFILE = "legacy"
    module = basic.AnsibleModule(argument_spec={})
    argv = [shutil.which("timeout"), "--kill-after=5", "300", "true"]
    figures = {}
    for name, run in (("run_command", module.run_command), ("process_run", process_run)):
        seconds = timed(run, argv, args.runs)
        figures[name] = {"total_s": round(sum(seconds), 2), "median_ms": round(statistics.median(seconds) * 1000, 2),
                         "over_half_a_second": sum(1 for value in seconds if value > 0.5)}
    print(json.dumps(figures, indent=2))
    print("%d runs of %s: run_command %.2f s (%d over 0.5 s), process_run %.2f s (%d over 0.5 s), %.1fx" % (
        args.runs, " ".join(argv[1:]), figures["run_command"]["total_s"], figures["run_command"]["over_half_a_second"],
        figures["process_run"]["total_s"], figures["process_run"]["over_half_a_second"],
        figures["run_command"]["total_s"] / max(figures["process_run"]["total_s"], 0.001)))


if __name__ == "__main__":
    main()
