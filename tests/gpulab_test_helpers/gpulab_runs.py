"""Helpers for scenario tests that drive real ansible-playbook runs against the scenario's containers.

Molecule's verifier runs pytest with the provisioner's environment (ANSIBLE_CONFIG, roles and collections paths,
MOLECULE_INVENTORY_FILE), so a playbook run here is the same command an admin types, against the same inventory.
Used by most scenarios' tests: `from gpulab_test_helpers import gpulab_runs as runs` (pytest.ini's pythonpath).
"""

import json
import os
import re
import resource
import subprocess
import time
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[2]
ANSI = re.compile(r"\x1b\[[0-9;]*m")
RECAP = re.compile(r"^(\S+)\s*:\s*ok=(\d+)\s+changed=(\d+)\s+unreachable=(\d+)\s+failed=(\d+)"
                   r"(?:\s+skipped=(\d+))?(?:\s+rescued=(\d+))?(?:\s+ignored=(\d+))?", re.M)


class Run:
    """One finished ansible-playbook run: rc, output without colours, and the recap per host."""

    def __init__(self, args, proc):
        self.args = args
        self.rc = proc.returncode
        self.output = ANSI.sub("", proc.stdout + proc.stderr)
        self.recap = {}
        for match in RECAP.finditer(self.output):
            names = ("ok", "changed", "unreachable", "failed", "skipped", "rescued", "ignored")
            self.recap[match.group(1)] = dict(zip(names, (int(g or 0) for g in match.groups()[1:])))

    def changed(self, host):
        return self.recap[host]["changed"]

    def changed_tasks(self):
        """Names of the tasks that reported a change, in order."""
        names, task = [], None
        for line in self.output.splitlines():
            match = re.match(r"^TASK \[(.*?)\]", line)
            if match:
                task = match.group(1)
            elif line.startswith("changed:") and task and task not in names:
                names.append(task)
        return names

    def __repr__(self):
        # pytest prints this on a failed assertion: the command, the changed tasks and the end of the output.
        return "ansible-playbook %s -> rc %s, changed tasks: %s\n%s" % (
            " ".join(self.args), self.rc, self.changed_tasks(), self.output[-6000:])


def inventory():
    return str(Path(os.environ["MOLECULE_INVENTORY_FILE"]).parent)


def playbook(path, limit, extra_vars=None, check=False, tags=None):
    """Run PROJECT/path on the hosts in limit (also passed as gpulab_hosts) with diff output."""
    variables = {"gpulab_hosts": limit}
    if os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY"):
        # The scenario's own fleet report, as molecule.yml sets for converge: scenarios run side by side.
        variables["rocm_report_dest"] = os.environ["MOLECULE_EPHEMERAL_DIRECTORY"] + "/fleet-report"
    variables.update(extra_vars or {})
    args = ["-i", inventory(), str(PROJECT / path), "--limit", limit, "--diff", "-e", json.dumps(variables)]
    if check:
        args.append("--check")
    if tags:
        args += ["--tags", tags]
    env = dict(os.environ, ANSIBLE_FORCE_COLOR="0", ANSIBLE_NOCOLOR="1")
    started, cpu_before = time.monotonic(), _children_cpu()
    proc = subprocess.run(["ansible-playbook"] + args, capture_output=True, text=True, env=env, cwd=PROJECT,
                          check=False)
    run = Run(args, proc)
    _record(run, time.monotonic() - started, _children_cpu() - cpu_before)
    return run


def _children_cpu():
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def _record(run, wall, cpu):
    """One line per run in $GPULAB_RUN_LOG (the test command sets it): what each scenario's runs cost."""
    path = os.environ.get("GPULAB_RUN_LOG")
    if not path:
        return
    scenario = os.environ.get("MOLECULE_SCENARIO_NAME", "-")
    tasks = sum(counts["ok"] + counts["skipped"] + counts["failed"] for counts in run.recap.values())
    variables = sorted(set(json.loads(run.args[7])) - {"gpulab_hosts", "rocm_report_dest"})
    with open(path, "a") as handle:
        handle.write("%s\t%.1f\t%.1f\t%d\t%s %s %s %s\n" % (scenario, wall, cpu, tasks, run.args[2], run.args[4],
                                                            ",".join(variables), " ".join(run.args[8:])))


# What a snapshot leaves out: kernel and runtime filesystems, temporary folders, Ansible's own working folder of the
# account it logs in as (root through docker exec, ops in the SSH lab: the connection creates and removes it on every
# task), the SSH lab's login records and sudo log, apt's binary caches, which any read-only apt query
# (apt-cache madison, apt-cache policy) rebuilds when they are missing or older than the lists, and the planner log
# that Debian 13's apt writes on every solver run, simulations (check mode) included.
_SNAPSHOT = r"""
set -e
find / -xdev \( -path /proc -o -path /sys -o -path /dev -o -path /run -o -path /tmp -o -path /var/tmp \
  -o -path /root/.ansible -o -path /var/cache/apt/pkgcache.bin -o -path /var/cache/apt/srcpkgcache.bin \
  -o -path /var/log/apt/eipp.log.xz -o -path /home/ops/.ansible -o -path /var/log/gpulab-sudo.log \
  -o -path /var/log/wtmp -o -path /var/log/btmp -o -path /var/log/lastlog \) -prune \
  -o -printf '%y %m %u %g %s %p -> %l\n' | LC_ALL=C sort
find /etc /opt -xdev -type f -print0 | LC_ALL=C sort -z | xargs -0 -r sha256sum
dpkg -l
dpkg --get-selections
"""


def snapshot(host):
    """Every file (type, mode, owner, size, path, link target), checksums of /etc and /opt, and the packages."""
    return host.check_output("sh -c %s" % _quote(_SNAPSHOT)).splitlines()


def _quote(text):
    return "'" + text.replace("'", "'\\''") + "'"


def differences(before, after):
    """Lines only in one of two snapshots, marked - and +."""
    old, new = set(before), set(after)
    return ["- " + line for line in before if line not in new] + ["+ " + line for line in after if line not in old]
