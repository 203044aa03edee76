"""Loaded by tests/bench/task_cpu.py into one ansible-playbook run (PYTHONPATH): each task's worker process writes
its own CPU seconds and its children's (the docker exec clients) to $GPULAB_TASK_CPU, one JSON line per task, and
the main process its own and all its children's at exit. Measurement only; nothing else changes."""

import atexit
import json
import os
import resource
import sys
import time

OUT = os.environ.get("GPULAB_TASK_CPU")


def _children():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _write(record):
    with open(OUT, "a") as handle:
        handle.write(json.dumps(record) + "\n")


if OUT and os.path.basename(sys.argv[0]) == "ansible-playbook":
    from ansible.executor.process import worker

    _main_pid = os.getpid()
    _run = worker.WorkerProcess._run

    def _timed_run(self):
        started, children = time.process_time(), _children()
        try:
            return _run(self)
        finally:
            _write({"task": self._task.get_name(), "worker": time.process_time() - started,
                    "children": _children() - children})

    worker.WorkerProcess._run = _timed_run

    def _at_exit():
        if os.getpid() == _main_pid:
            own = resource.getrusage(resource.RUSAGE_SELF)
            _write({"main": own.ru_utime + own.ru_stime, "all_children": _children()})

    atexit.register(_at_exit)
