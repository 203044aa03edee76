"""Run logs committed as evidence (docs/h200-pci, docs/device-runs, docs/distro-install, tests/scale/results,
tests/report/h200) carry no path of the machine they ran on (checkouts, home and temp folders, private venvs: replaced
by placeholders such as <checkout>) and no host other than this machine's loopback, a placeholder (UBUNTU-ARCHIVE) or,
in an os-release block, the OS vendor's web pages. Each is committed once: no empty file, no byte copy of another
(the scripts that write them keep one copy, docs/device-runs.md)."""

import hashlib
import re

import pytest

from release_helpers import ROOT

LOGS = sorted({*ROOT.glob("docs/**/*.log"), *ROOT.glob("docs/**/*.txt"), *ROOT.glob("tests/scale/results/*"),
               *ROOT.glob("tests/report/h200/*.log")})
MACHINE_PATH = re.compile(r"(?<![\w.<>~-])/(?:work|root|home|tmp|var/tmp|srv|mnt|opt/torch)/[^\s'\"]*")
URL = re.compile(r"\b[a-z][a-z0-9+.-]*://([^/\s:'\"]+)")
OS_RELEASE = re.compile(r"^[A-Z_]*URL=")


def test_the_logs_are_found():
    names = {path.relative_to(ROOT).as_posix() for path in LOGS}
    assert {"docs/h200-pci/env.txt", "tests/scale/results/serial4-forks3.log"} <= names


def test_each_committed_run_file_is_kept_once():
    files = [path for path in ROOT.glob("docs/*/**/*") if path.is_file()]
    assert files
    assert not [path.relative_to(ROOT).as_posix() for path in files if not path.stat().st_size]
    seen = {}
    for path in files:
        seen.setdefault(hashlib.sha256(path.read_bytes()).hexdigest(), []).append(path.relative_to(ROOT).as_posix())
    assert not [names for names in seen.values() if len(names) > 1]


def problems_in(path):
    problems = []
    for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
        problems += [f"{number}: path {m.group(0)}" for m in MACHINE_PATH.finditer(line)]
        for host in URL.findall(line):
            if host not in ("127.0.0.1", "localhost") and not host.isupper() and not OS_RELEASE.match(line):
                problems.append(f"{number}: host {host}")
    return problems


@pytest.mark.parametrize("path", LOGS, ids=lambda p: p.relative_to(ROOT).as_posix())
def test_log_has_no_machine_path_or_host(path):
    problems = problems_in(path)
    assert not problems, problems


def test_the_checks_catch_what_they_look_for(tmp_path):
    sample = tmp_path / "run.log"
    sample.write_text("config file = /work/main/ansible.cfg\nErr:1 http://mirror.example/debian\n"
                      "fine: <checkout>/roles, ~/.ansible, /opt/rocm/bin, http://127.0.0.1:8080/x, http://UBUNTU-ARCHIVE/u\n")
    assert problems_in(sample) == ["1: path /work/main/ansible.cfg", "2: host mirror.example"]
