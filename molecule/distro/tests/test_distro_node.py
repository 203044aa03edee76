"""A node converged with install source distro: Debian 13's own ROCm packages, no AMD repository."""

import re

import pytest

TOOLS = {"rocminfo": "rocminfo", "rocm-smi": "rocm-smi", "amd-smi": "amd-smi"}
AMD_VERSION = re.compile(r"\.\d{5}-\d+~\d+\.\d+$")


@pytest.mark.parametrize("tool, package", TOOLS.items())
def test_tools_come_from_the_distribution(host, tool, package):
    path = host.check_output(f"command -v {tool}")
    assert path == f"/usr/bin/{tool}"
    owner, version = host.check_output(f"dpkg-query -W -f '${{Package}} ${{Version}}' {package}").split()
    assert owner == package
    assert not AMD_VERSION.search(version), version  # Debian's version form (6.1.2-2), not AMD's
    assert host.check_output(f"dpkg -S {path}").startswith(package + ":")


def test_no_amd_repository_and_no_amd_package(host):
    for path in ("/etc/apt/sources.list.d/rocm.list", "/etc/apt/sources.list.d/amdgpu.list",
                 "/etc/apt/preferences.d/rocm-pin-600", "/etc/apt/keyrings/rocm.gpg", "/opt/rocm"):
        assert not host.file(path).exists, path
    versions = host.check_output("dpkg-query -W -f '${Version}\\n'").splitlines()
    assert not [v for v in versions if AMD_VERSION.search(v)]


def test_real_rocminfo_reports_no_gpu(host):
    # Debian's rocminfo 6.1 in a container with no GPU: rc 1 and the kernel driver message.
    result = host.run("rocminfo")
    assert result.rc == 1
    assert "ROCk module is NOT loaded" in result.stdout + result.stderr


def test_environment_points_at_usr(host):
    out = host.check_output("su - alice -c 'echo $ROCM_PATH; echo $HIP_PLATFORM; echo $PATH'")
    rocm_path, platform, path = out.splitlines()
    assert rocm_path == "/usr" and platform == "amd"
    assert "/usr/bin" in path.split(":") and not [p for p in path.split(":") if "rocm" in p]
    profile = host.file("/etc/profile.d/rocm.sh").content_string
    assert "export ROCM_PATH=/usr" in profile and "PATH=" not in profile.replace("ROCM_PATH", "")
    # The libraries are in the linker's default directories: no rocm.conf.
    assert not host.file("/etc/ld.so.conf.d/rocm.conf").exists
