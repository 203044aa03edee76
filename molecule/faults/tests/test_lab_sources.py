"""Issue 38: a lab's own apt list for the repository a release change moves to, with another keyring. apt refuses
the two together ("Conflicting values set for option Signed-By"), so the repo phase must refuse the change before it
writes anything, naming both files, and apt must work afterwards as it did before. Written for the integrator to
run (molecule test -s faults); the unit tests (test_apt_source.py) prove the same over this machine's real apt."""

import os

from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-faults-trixie"
testinfra_hosts = [NODE]
SOURCES = "/etc/apt/sources.list.d/rocm.list"
LAB_LIST = "/etc/apt/sources.list.d/lab-rocm.list"
LAB_KEYRING = "/usr/share/keyrings/lab-rocm.gpg"
JOURNAL = "/var/lib/gpulab-rocm/apt-source.journal"
BASE = {"rocm_expected_gpu_count": 0}


def apt_update(host):
    result = host.run("apt-get update")
    return result.rc == 0 and "E:" not in result.stderr and "W:" not in result.stderr, result.stderr


def test_a_release_change_that_conflicts_with_a_lab_list_is_refused_before_any_change(host):
    converged = runs.playbook("site.yml", NODE, BASE)
    assert converged.rc == 0, converged
    mirror = os.environ["GPULAB_MIRROR_URL"]
    # The lab's own list for ROCm 6.2 (as a lab that tried the release by hand keeps it), signed-by its own copy of
    # the key: on its own it works with the host's rocm.list (6.2.4).
    host.run("cp /etc/apt/keyrings/rocm.gpg %s && echo 'deb [signed-by=%s] %s/rocm/apt/6.2 noble main' > %s"
             % (LAB_KEYRING, LAB_KEYRING, mirror, LAB_LIST))
    try:
        ok, stderr = apt_update(host)
        assert ok, "the lab list must work before the change: " + stderr
        before = runs.snapshot(host)
        run = runs.playbook("site.yml", NODE, dict(BASE, rocm_version="6.2"))
        text = " ".join(run.output.split())
        assert run.rc != 0, run
        assert "Conflicting values set for option Signed-By regarding source %s/rocm/apt/6.2/ noble" % mirror in text
        assert "%s (already on the host)" % LAB_LIST in text and "%s (this run would write it)" % SOURCES in text
        assert "Nothing was changed" in text
        # Refused before any change: every file, /etc's and /opt's contents and dpkg's status as before; no journal.
        assert runs.differences(before, runs.snapshot(host)) == []
        assert not host.file(JOURNAL).exists
        assert "6.2.4" in host.file(SOURCES).content_string
        # apt works afterwards, as before.
        ok, stderr = apt_update(host)
        assert ok, stderr
        assert host.run("apt-cache policy").rc == 0
    finally:
        host.run("rm -f %s %s" % (LAB_LIST, LAB_KEYRING))
    # The lab list gone, the host converges as before (the last test files expect a converged host).
    again = runs.playbook("site.yml", NODE, BASE)
    assert again.rc == 0 and again.changed(NODE) == 0, again
