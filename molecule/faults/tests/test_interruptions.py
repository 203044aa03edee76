"""Runs killed half way, a linker cache a killed run left stale, a half-written sources file, the admin's hold
(issue 15, items 9 and 14): each state made for real on the converged host, then real site.yml runs; every claim in
their messages is checked on the host, and apt works afterwards. The host ends converged for the next test file."""

import os
import signal
import subprocess
import time

from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-faults-trixie"
testinfra_hosts = [NODE]
SOURCES = "/etc/apt/sources.list.d/rocm.list"
KEYRING = "/etc/apt/keyrings/rocm.gpg"
JOURNAL = "/var/lib/gpulab-rocm/apt-source.journal"
STATE = os.path.join(os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", ""), "fault-mirror")
WWW = os.path.join(os.environ.get("GPULAB_MIRROR_STATE") or str(runs.PROJECT / ".cache" / "mirror"), "www")


def in_container(script):
    """A root shell in the container, straight through docker: it may kill what Ansible left running there."""
    return subprocess.run(["docker", "exec", NODE, "sh", "-c", script], capture_output=True, text=True, check=False)


# This scenario's container has the no-gpu fixture profile: rocminfo lists no GPU there.
BASE = {"rocm_expected_gpu_count": 0}


def site(extra=None, tags=None):
    return runs.playbook("site.yml", NODE, dict(BASE, **(extra or {})), tags=tags)


def fault_url():
    with open(os.path.join(STATE, "port")) as handle:
        return "http://127.0.0.1:" + handle.read().strip()


def set_faults(text):
    with open(os.path.join(STATE, "faults"), "w") as handle:
        handle.write(text)


def flat(run):
    return " ".join(run.output.split())


def apt_update_is_clean(host):
    result = host.run("apt-get update")
    return result.rc == 0 and "E:" not in result.stderr and "W:" not in result.stderr


def converge(host, extra=None):
    first = site(extra)
    assert first.rc == 0, first
    again = site(extra)
    assert again.rc == 0 and again.changed(NODE) == 0, again


def test_a_run_killed_during_a_failing_refresh_is_finished_by_the_next(host):
    # Molecule's converge applied rocm_repo and rocm_sdk only: the whole site.yml first (its second run is the
    # end of every test here).
    assert site().rc == 0
    good = host.file(SOURCES).content_string
    bad = {"rocm_version": "6.2.3", "rocm_repo_base_url": fault_url()}
    set_faults("delay 120 /rocm/apt/6.2.3/\n")
    try:
        args = ["ansible-playbook", "-i", runs.inventory(), str(runs.PROJECT / "site.yml"), "--limit", NODE, "-e",
                '{"gpulab_hosts": "%s", "rocm_version": "6.2.3", "rocm_repo_base_url": "%s", '
                '"rocm_expected_gpu_count": 0}' % (NODE, fault_url())]
        proc = subprocess.Popen(args, cwd=str(runs.PROJECT), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                start_new_session=True)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and in_container("test -f %s && grep -q 6.2.3 %s" % (JOURNAL, SOURCES)).returncode:
            time.sleep(0.5)
        time.sleep(1)  # the refresh is waiting on the mirror now
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        in_container("pkill -9 -x apt-get; pkill -9 -f /usr/lib/apt/methods/; pkill -9 -x python3; true")
    finally:
        set_faults("")
    # What the killed run left: its journal, and the sources of a release the mirror does not have.
    assert host.file(JOURNAL).exists
    assert "/rocm/apt/6.2.3 " in host.file(SOURCES).content_string
    # The next run, still asking for that release: its refresh fails, and it puts back what apt last accepted
    # (the journal's sources, not the ones the killed run wrote), as its message says.
    run = site(bad)
    assert run.rc != 0, run
    assert "previous sources, pin and key were put back, and apt reads the host's sources again" in flat(run), run
    assert host.file(SOURCES).content_string == good
    assert not host.file(JOURNAL).exists
    assert apt_update_is_clean(host)
    converge(host)


def test_a_failed_change_of_key_puts_the_old_key_back(host):
    before = host.check_output("sha256sum %s" % KEYRING)
    with open(os.path.join(WWW, "wrong-fingerprint")) as handle:
        wrong = handle.read().strip()
    # A key apt cannot verify the repository with, trusted by mistake: the refresh fails on the signature.
    run = site({"rocm_repo_key_url": os.environ["GPULAB_MIRROR_WRONG_KEY_URL"],
                "rocm_repo_key_fingerprints": [wrong]}, tags="repo")
    assert run.rc != 0, run
    assert "previous sources, pin and key were put back, and apt reads the host's sources again" in flat(run), run
    assert host.check_output("sha256sum %s" % KEYRING) == before
    assert apt_update_is_clean(host)


def test_a_linker_cache_a_killed_run_left_stale_is_rebuilt(host):
    # The state of a run killed between writing rocm.conf and running ldconfig (the old handler was never replayed).
    in_container("mv /etc/ld.so.conf.d/rocm.conf /root/ && ldconfig && mv /root/rocm.conf /etc/ld.so.conf.d/")
    assert "/opt/rocm/lib/libamdhip64" not in host.check_output("ldconfig -p")
    run = site(tags="env")
    assert run.rc == 0 and run.changed(NODE) == 1, run
    assert "/opt/rocm/lib/libamdhip64" in host.check_output("ldconfig -p")
    assert site(tags="env").changed(NODE) == 0


def test_a_half_written_sources_file_is_repaired(host):
    in_container("printf 'deb [arch=amd64 signed-by=%s] http://127.0.0.1:' > %s" % (KEYRING, SOURCES))
    assert not apt_update_is_clean(host)
    converge(host)
    assert apt_update_is_clean(host)


def test_the_admins_hold_is_respected(host):
    host.check_output("apt-mark hold rocblas")
    try:
        plain = site()
        assert plain.rc == 0 and plain.changed(NODE) == 0, plain
        assert "rocblas" in host.check_output("apt-mark showhold").split()
        before = runs.snapshot(host)
        move = site({"rocm_version": "6.2"})
        assert move.rc != 0, move
        # Refused in the plan pass, before rocm_repo wrote the 6.2 sources: every file, /etc and dpkg as they were.
        assert "rocblas is held (apt-mark hold)" in flat(move), move
        assert "found by planning every phase before any change, so nothing was changed" in flat(move), move
        assert runs.differences(before, runs.snapshot(host)) == []
        assert "rocblas" in host.check_output("apt-mark showhold").split()
    finally:
        host.check_output("apt-mark unhold rocblas")
    converge(host)


def test_a_release_whose_packages_the_repository_lacks_is_refused_after_the_sources_step(host):
    # Only apt's answer after the new sources are refreshed can tell: the refusal names what was written.
    packages = host.check_output("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'")
    move = site({"rocm_version": "6.2", "rocm_sdk_extra_packages": ["hipfft"]})
    assert move.rc != 0, move
    message = flat(move)
    assert "rocm_sdk: not in the configured apt repositories: hipfft (ROCm 6.2.0)" in message, move
    assert "rocm_sdk had installed or removed no package yet" in message, move
    assert "Already changed in this run before it: repo (write %s" % SOURCES in message, move
    assert "rocm/apt/6.2 noble main" in host.file(SOURCES).content_string
    assert host.check_output("dpkg-query -W -f '${Package} ${Version} ${db:Status-Abbrev}\\n'") == packages
    assert apt_update_is_clean(host)
    assert host.run("apt-get install --simulate rocm-core").rc == 0
    converge(host)
