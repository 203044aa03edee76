"""Invalid variables are rejected by argument_specs or preflight before any change: real site.yml runs against the
converged host, each with one bad input, and a snapshot of files and packages before and after."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "lifecycle", "tests"))
import gpulab_runs as runs  # noqa: E402  (the lifecycle scenario's helper)

NODE = "molecule-faults-trixie"

# What the host reports after the fixture's /etc/os-release (and /etc/debian_version) replace the real ones.
OS_RELEASE = {
    "debian11": ('PRETTY_NAME="Debian GNU/Linux 11 (bullseye)"\nNAME="Debian GNU/Linux"\nVERSION_ID="11"\n'
                 'VERSION="11 (bullseye)"\nVERSION_CODENAME=bullseye\nID=debian\n', "11.11"),
    "mint": ('NAME="Linux Mint"\nVERSION="21.3 (Virginia)"\nID=linuxmint\nID_LIKE="ubuntu debian"\n'
             'PRETTY_NAME="Linux Mint 21.3"\nVERSION_ID="21.3"\nVERSION_CODENAME=virginia\nUBUNTU_CODENAME=jammy\n',
             None),
}

CASES = [
    # id, extra vars, fake OS, words the message must contain
    ("malformed version", {"rocm_version": "6.2.x"}, None, ["'6.2.x' is not a release number"]),
    ("malformed side-by-side release", {"rocm_versions": ["6.2.4", "latest"]}, None,
     ["'latest' is not a release number"]),
    ("default not among the side-by-side releases", {"rocm_versions": ["6.2"]}, None,
     ["rocm_version 6.2.4 is not among rocm_versions (6.2.0)"]),
    ("unknown install source", {"rocm_install_source": "conda"}, None, ["conda", "amd, distro"]),
    ("listed user that does not exist", {"rocm_gpu_users": ["alice", "nosuchuser"]}, None,
     ["users that do not exist: nosuchuser"]),
    ("unknown codename (Debian 11)", {}, "debian11", ["Debian 11 has no ROCm apt suite"]),
    ("unsupported OS (Linux Mint)", {}, "mint", ["Linux Mint 21.3 has no ROCm apt suite"]),
]


@pytest.fixture
def fake_os(host, request):
    """Replace /etc/os-release (a link to /usr/lib/os-release) and /etc/debian_version for one test."""
    name = request.param
    if name:
        text, debian_version = OS_RELEASE[name]
        host.check_output("cp -a /etc/os-release /etc/debian_version /run/ && rm /etc/os-release")
        host.check_output("printf %s > /etc/os-release" % runs._quote(text))
        if debian_version:
            host.check_output("echo %s > /etc/debian_version" % debian_version)
    yield name
    if name:
        host.check_output("rm -f /etc/os-release && cp -a /run/os-release /run/debian_version /etc/ "
                          "&& rm /run/os-release /run/debian_version")


@pytest.mark.parametrize("extra_vars, fake_os, words", [c[1:] for c in CASES], ids=[c[0] for c in CASES],
                         indirect=["fake_os"])
def test_rejected_before_any_change(host, extra_vars, fake_os, words):
    before = runs.snapshot(host)
    run = runs.playbook("site.yml", NODE, extra_vars)
    after = runs.snapshot(host)
    assert run.rc != 0, run
    assert run.recap[NODE]["failed"] == 1 and run.changed(NODE) == 0, run
    message = " ".join(run.output.split())
    for word in words:
        assert word in message, run
    assert runs.differences(before, after) == []
