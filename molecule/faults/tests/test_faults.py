"""After the injected faults and the last converge: the good sources are in place, dpkg is consistent, nothing of
the fault fixtures is left, and apt works."""

import os

testinfra_hosts = ["molecule-faults-trixie"]


def test_sources_are_the_last_good_ones(host):
    content = host.file("/etc/apt/sources.list.d/rocm.list").content_string
    assert f"{os.environ['GPULAB_MIRROR_URL']}/rocm/apt/6.2.4 noble main" in content
    assert "6.2.3" not in content


def test_no_backup_or_stray_files_in_apt_folders(host):
    assert host.check_output("ls /etc/apt/sources.list.d").split() == ["rocm.list"]
    assert host.check_output("ls /etc/apt/preferences.d").split() == ["rocm-pin-600"]


def test_apt_update_works(host):
    result = host.run("apt-get update")
    assert result.rc == 0, result.stderr
    assert "E:" not in result.stderr and "W:" not in result.stderr, result.stderr


def test_dpkg_is_consistent_and_rocm_installed(host):
    assert host.check_output("dpkg --audit") == ""
    assert host.check_output("ls -A /var/lib/dpkg/updates") == ""
    assert host.package("rocm-hip-sdk").version.startswith("6.2.4.60204-")
    assert host.check_output("readlink -f /opt/rocm") == "/opt/rocm-6.2.4"


def test_fault_fixtures_are_gone(host):
    # update-alternatives is dpkg's own again, /opt is no tmpfs, no lock holder runs.
    assert host.check_output("dpkg-divert --list /usr/bin/update-alternatives") == ""
    assert host.check_output("dpkg -S /usr/bin/update-alternatives").startswith("dpkg:")
    assert "/opt" not in host.check_output("cat /proc/mounts").split()
    assert not host.file("/run/gpulab-hold-dpkg-lock").exists
    result = host.run("apt-get install --simulate rocm-core")
    assert result.rc == 0 and "lock" not in result.stderr, result.stderr
