"""After the injected faults: the good sources are in place and apt works."""

import os


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
