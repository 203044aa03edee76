"""apt_packages run by ansible itself on this machine, in check mode only (nothing is installed or removed): the real
dpkg-query and apt-get --simulate of the host. Needs a Debian-family host with dpkg and apt (the build machine)."""

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
