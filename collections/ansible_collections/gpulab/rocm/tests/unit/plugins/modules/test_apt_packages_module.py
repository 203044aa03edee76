"""apt_packages run by ansible itself on this machine, in check mode only (nothing is installed or removed): the real
dpkg-query and apt-get --simulate of the host. Needs a Debian-family host with dpkg and apt (the build machine)."""

import os
import shutil
import subprocess

import pytest

from ansible_collections.gpulab.rocm.plugins.modules import apt_packages
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import ANSIBLE, run_main, run_through_ansible

pytestmark = pytest.mark.skipif(ANSIBLE is None or shutil.which("dpkg-query") is None or shutil.which("apt-get") is None,
                                reason="needs ansible, dpkg and apt")


def run_module(args):
    """apt_packages' main() in-process, in check mode with diff."""
    return run_main(apt_packages.main, args, check_mode=True, diff=True)


def test_an_installed_package_at_its_version_changes_nothing():
    version = subprocess.run(["dpkg-query", "-W", "-f", "${Version}", "dpkg"], capture_output=True, text=True,
                             check=True).stdout
    result = run_through_ansible("gpulab.rocm.apt_packages",
                                 {"install": ["dpkg=%s" % version, "apt"], "holds": {"dpkg": "install"}})
    assert result["changed"] is False and not result.get("failed"), result
    assert result["packages"]["dpkg"] == ["ii", version]
    assert "simulation" not in result


def test_another_version_is_simulated_by_apt():
    # apt knows no such version: the simulation fails, so check mode warns with apt's reason and reports the change.
    result = run_module({"install": ["dpkg=0.0-gpulab-none"]})
    assert result["changed"] is True and not result.get("failed"), result
    assert result["simulation"] is None and result["installed"] == {"dpkg": "0.0-gpulab-none"}
    assert any("apt does not know this package or version" in text for text in result.get("warnings", [])), result
    assert "install dpkg 0.0-gpulab-none" in result["diff"]["prepared"]


def test_removing_a_package_the_host_lacks_changes_nothing():
    result = run_module({"remove": ["gpulab-not-a-package"], "purge": True})
    assert result["changed"] is False and result["packages"] == {}, result


def test_a_value_that_is_not_a_package_name_fails_before_anything_runs():
    result = run_module({"install": ["--allow-unauthenticated"]})
    assert result.get("failed") and "install holds values that are not a Debian package name" in result["msg"]
    assert "Nothing was changed" in result["msg"]


# Issue 38: a lab package left half-configured, and apt's lists lock, over real captured outputs (fixtures/apt).

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "module_utils", "fixtures", "apt")


def captured(name):
    with open(FIXTURES + "/" + name) as handle:
        text = handle.read()
    rc = int(text.split("\n", 1)[0].split("=", 1)[1])
    return rc, text.split("--- stdout\n", 1)[1], text.split("--- stderr\n", 1)[1].split("--- stdout\n", 1)[0]


class Failed(Exception):
    pass


class StubModule:
    """An AnsibleModule whose commands answer from captured outputs: argv[0:2] -> [(rc, stdout, stderr), ...]."""

    check_mode = False

    def __init__(self, answers, **params):
        self.answers = answers
        self.calls = []
        self.params = dict(dict(install=[], remove_first=[], remove=[], purge=False, holds={}, refresh="never",
                                sources=[], cache_valid_time=0, download_first=False, install_recommends=False,
                                allow_downgrade=False, allow_change_held_packages=False, lock_timeout=60), **params)

    def run_command(self, argv, environ_update=None):
        self.calls.append(argv)
        return self.answers[" ".join(argv[:2])].pop(0)

    def fail_json(self, **kwargs):
        raise Failed(kwargs)


def test_a_half_configured_lab_package_is_named_with_its_error():
    status = captured("dpkg-query-half-configured.txt")
    module = StubModule({"dpkg-query -W": [(1, "", ""), status],
                         "apt-get install": [captured("apt-get-install-with-half-configured-lab-package.txt")]},
                        install=["demo-lib"])
    with pytest.raises(Failed) as failed:
        apt_packages.Apt(module).apply()
    result = failed.value.args[0]
    assert "lab-license (dpkg --configure: installed lab-license package post-installation script subprocess " \
           "returned error exit status 1; it printed: lab-license: cannot reach the license server" in result["msg"]
    assert "dpkg has these packages unfinished now: lab-license (half-configured)." in result["msg"]
    assert result["unfinished"] == {"lab-license": "half-configured"}
    assert "non-zero return code" not in result["msg"]


def test_the_refresh_waits_for_apt_s_lists_lock_and_names_it(monkeypatch):
    monkeypatch.setattr(apt_packages.time, "sleep", lambda seconds: None)
    locked = captured("apt-get-update-lists-lock-held-lock-timeout-5.txt")
    module = StubModule({"apt-get update": [locked, locked, (0, "Hit:1 x\n", "")]}, refresh="all")
    apt = apt_packages.Apt(module)
    apt.refresh()
    assert apt.result["refreshed"] and len(module.calls) == 3
    module = StubModule({"apt-get update": [locked]}, refresh="all", lock_timeout=0)
    with pytest.raises(Failed) as failed:
        apt_packages.Apt(module).refresh()
    assert "held apt's lists lock (/tmp/W/apt/lists/lock, held by process 4242 (python3))" in failed.value.args[0]["msg"]
    assert "dpkg lock" not in failed.value.args[0]["msg"]


def fixture_text(name):
    """A capture of apt's stderr alone (its first line is the exit status)."""
    with open(FIXTURES + "/" + name) as handle:
        return handle.read().split("\n", 1)[1]


def test_an_install_failing_after_the_replaced_packages_went_says_the_next_run_finishes_it():
    # A move between ROCm's streams removes the legacy packages before the Core ones come (AMD's instruction); the
    # install then failed (a 404 from the pool, captured). The message says what the host has and what to do.
    module = StubModule({"apt-get purge": [(0, "Removing rocm-core (6.2.4.60204-139~22.04) ...\n", "")],
                         "apt-get install": [(100, "", fixture_text("apt-get-install-404-rocblas-pool.txt"))],
                         "dpkg-query -W": [(0, "rocm-core\tii \t6.2.4.60204-139~22.04\n", ""), (0, "", "")]},
                        remove_first=["rocm-core"], install=["amdrocm10.1-gfx942=10.1.0-2"], purge=True)
    with pytest.raises(Failed) as failed:
        apt_packages.Apt(module).apply()
    message = failed.value.args[0]["msg"]
    assert "were removed before (rocm-core)" in message and "run the same play again" in message
