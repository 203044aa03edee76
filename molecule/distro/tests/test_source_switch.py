"""Switching the converged distro node to AMD's packages and back, with real site.yml runs (in this order, after
the other tests of this scenario: pytest runs the files by name). Each switch is followed by a second run that
must change nothing."""

import re

from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-distro-trixie"
AMD_VERSION = re.compile(r"\.(\d{5})-\d+~\d+\.\d+$")
DISTRO = ["rocminfo", "rocm-smi", "amd-smi"]


def packages(host):
    """{name: version} of installed packages."""
    rows = host.check_output("dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n'").splitlines()
    return dict(row.split()[1:3] for row in rows if row.startswith("ii "))


def converge_twice(extra_vars):
    first = runs.playbook("site.yml", NODE, extra_vars)
    assert first.rc == 0, first
    assert first.changed(NODE) > 0, first
    second = runs.playbook("site.yml", NODE, extra_vars)
    assert second.rc == 0, second
    assert second.changed(NODE) == 0, second


def test_switch_to_amd(host):
    converge_twice({"rocm_install_source": "amd"})
    installed = packages(host)
    amd = {name for name, version in installed.items() if AMD_VERSION.search(version)}
    assert {"rocm-hip-sdk", "rocblas", "miopen-hip", "rocm-core", "rocminfo"} <= amd
    assert {AMD_VERSION.search(installed[name]).group(1) for name in amd} == {"60204"}
    # Debian's ROCm packages are gone with their own dependencies; rocminfo is AMD's now.
    assert "rocm-smi" not in installed and "amd-smi" not in installed
    assert "libhsa-runtime64-1" not in installed and "librocm-smi64-1" not in installed
    assert host.file("/etc/apt/sources.list.d/rocm.list").exists
    assert host.file("/etc/apt/preferences.d/rocm-pin-600").exists
    assert host.check_output("readlink -f /opt/rocm") == "/opt/rocm-6.2.4"
    assert host.file("/etc/ld.so.conf.d/rocm.conf").exists
    assert host.check_output("su - alice -c 'echo $ROCM_PATH; command -v rocminfo'").splitlines() == [
        "/opt/rocm", "/opt/rocm/bin/rocminfo"]


def test_switch_back_to_the_distribution(host):
    converge_twice({})  # the host's own rocm_install_source, distro
    installed = packages(host)
    assert not [name for name, version in installed.items() if AMD_VERSION.search(version)]
    for name in DISTRO:
        assert name in installed and not AMD_VERSION.search(installed[name]), name
    for path in ("/etc/apt/sources.list.d/rocm.list", "/etc/apt/preferences.d/rocm-pin-600",
                 "/etc/apt/keyrings/rocm.gpg", "/etc/ld.so.conf.d/rocm.conf", "/opt/rocm"):
        assert not host.file(path).exists, path
    assert host.check_output("command -v rocminfo") == "/usr/bin/rocminfo"
    assert host.run("apt-get update").rc == 0
