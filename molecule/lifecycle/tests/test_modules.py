"""Side-by-side releases as environment modules (rocm_modules), as a GPU user sees them in a login shell: on the
lifecycle host with Debian's Lmod (installed by prepare, as a lab that runs it) and on the second host with Debian's
Environment Modules, which the role installs there (rocm_modules_install). Real ansible-playbook runs; the tests
run in order, after test_lifecycle.py (which ends with the uninstall), and share one side-by-side converge.
"""

import re
import shlex

import pytest

from gpulab_test_helpers import gpulab_runs as runs

LMOD_HOST = "molecule-lifecycle-bookworm"
ENVMOD_HOST = "molecule-lifecycle-fresh"
BOTH = LMOD_HOST + "," + ENVMOD_HOST
testinfra_hosts = [LMOD_HOST]

# The default is the lower release, 6.2.0; the other is 6.2.4 (fixture hipcc prints each release's HIP version).
DEFAULT, OTHER = "6.2.0", "6.2.4"
# Only what the checks run (rocminfo, hipcc, libamdhip64): fewer packages to install and purge per release.
SIDE_BY_SIDE = {"rocm_version": "6.2", "rocm_versions": ["6.2.4", "6.2"], "rocm_modules_install": True,
                "rocm_sdk_packages": ["rocm-hip-runtime", "hipcc"], "rocm_sdk_kdb_enabled": False}
# The job that runs rocm_modules (site.yml adds the fleet report and Slurm plays, which these tests do not need).
PROVISION = "playbooks/provision.yml"
HIP_VERSION = {"6.2.0": "6.2.41133", "6.2.4": "6.2.41134"}
FOLDER = {LMOD_HOST: "/etc/lmod/modules/rocm", ENVMOD_HOST: "/etc/environment-modules/modules/rocm"}
LAB_FILE = "lab-build"


@pytest.fixture(scope="module")
def hosts():
    import testinfra
    return dict((name, testinfra.get_host("ansible://" + name, ansible_inventory=runs.inventory()))
                for name in (LMOD_HOST, ENVMOD_HOST))


def login(host, script):
    """Run script in alice's login shell (profile.d: the modules tool's init, then rocm_env's rocm.sh)."""
    return host.run("su - alice -c %s" % shlex.quote(script))


def values(out):
    """KEY=value lines printed by a script -> dict."""
    return dict(line.split("=", 1) for line in out.splitlines() if re.match(r"^[A-Z_]+=", line))


SHOW = 'echo ROCM_PATH="${ROCM_PATH-unset}"; echo LD="${LD_LIBRARY_PATH-}"; echo FIRST="${PATH%%:*}"; ' \
       'echo TOOL="$(command -v rocminfo)"'
# Which copy of ROCm's HIP library the dynamic linker loads for a program started in this shell.
LOADED = ("echo HIPLIB=\"$(python3 -c \"import ctypes; ctypes.CDLL('libamdhip64.so.6'); "
          "print([l.split()[-1] for l in open('/proc/self/maps') if 'libamdhip64' in l][0])\")\"")


def test_side_by_side_releases_get_a_modulefile_each_and_a_second_run_changes_nothing(hosts):
    first = runs.playbook(PROVISION, BOTH, SIDE_BY_SIDE)
    assert first.rc == 0, first
    assert first.changed(LMOD_HOST) > 0 and first.changed(ENVMOD_HOST) > 0, first
    # The role's own second run (Molecule's idempotence step runs the whole of site.yml with it, on the Lmod host).
    second = runs.playbook(PROVISION, BOTH, SIDE_BY_SIDE, tags="modules")
    assert second.rc == 0, second
    assert second.changed(LMOD_HOST) == 0 and second.changed(ENVMOD_HOST) == 0, second
    # The role installs Environment Modules only where the lab has no modules tool; the Lmod host keeps Lmod alone.
    assert hosts[ENVMOD_HOST].package("environment-modules").is_installed
    assert not hosts[LMOD_HOST].package("environment-modules").is_installed
    for name, host in hosts.items():
        assert host.check_output("ls -A %s" % FOLDER[name]).split() == [".version", DEFAULT, OTHER]
        for entry in (".version", DEFAULT, OTHER):
            info = host.file("%s/%s" % (FOLDER[name], entry))
            assert (info.user, info.group, info.mode) == ("root", "root", 0o644)
        assert "set ModulesVersion {%s}" % DEFAULT in host.file(FOLDER[name] + "/.version").content_string
        # A lab's own modulefile, which the role must never touch.
        lab = "printf '%%s\\n' '#%%Module1.0' '## the lab s own build' > %s/%s" % (FOLDER[name], LAB_FILE)
        host.check_output(lab)


def test_module_avail_lists_both_releases_and_marks_the_default(hosts):
    lmod = login(hosts[LMOD_HOST], "module avail rocm 2>&1")
    assert lmod.rc == 0, lmod.stdout + lmod.stderr
    # Lmod: "(D)" marks the default, explained under "Where:".
    assert re.search(r"rocm/%s \(D\)\s+rocm/%s\b" % (DEFAULT, OTHER), lmod.stdout), lmod.stdout
    assert "D:  Default Module" in lmod.stdout, lmod.stdout
    envmod = login(hosts[ENVMOD_HOST], "module avail rocm 2>&1")
    assert envmod.rc == 0, envmod.stdout + envmod.stderr
    # Environment Modules: the symbolic version "(default)".
    assert re.search(r"rocm/%s\(default\)\s+rocm/%s\b" % (DEFAULT, OTHER), envmod.stdout), envmod.stdout


@pytest.mark.parametrize("name", [LMOD_HOST, ENVMOD_HOST])
def test_loading_the_other_release_puts_it_first(hosts, name):
    host = hosts[name]
    before = values(login(host, SHOW + "; " + LOADED).stdout)
    # The login environment: the default release through /opt/rocm and the linker cache.
    assert before["ROCM_PATH"] == "/opt/rocm" and before["LD"] == "" and before["TOOL"] == "/opt/rocm/bin/rocminfo"
    assert before["HIPLIB"] == "/opt/rocm-%s/lib/libamdhip64.so.6" % DEFAULT, before
    run = login(host, "module load rocm/%s && %s; %s; echo HIP=\"$(hipcc --version | head -n 1)\"; "
                      "echo HEAD=\"$(sed -n 2p \"$(command -v rocminfo)\")\"; rocminfo | grep -c '^Agent '"
                % (OTHER, SHOW, LOADED))
    assert run.rc == 0, run.stdout + run.stderr
    got = values(run.stdout)
    prefix = "/opt/rocm-" + OTHER
    assert got["FIRST"] == prefix + "/bin", got
    assert got["ROCM_PATH"] == prefix
    assert got["LD"] == "%s/lib:%s/lib64" % (prefix, prefix)
    assert got["TOOL"] == prefix + "/bin/rocminfo"
    # The tools that run are that release's fixtures, and so is the library a program loads.
    assert got["HIP"] == "HIP version: %s-gpulab-fixture" % HIP_VERSION[OTHER]
    assert "TEST FIXTURE for ROCm %s" % OTHER in got["HEAD"]
    assert got["HIPLIB"] == prefix + "/lib/libamdhip64.so.6"
    # The fixture rocminfo prints the MI250X capture (a CPU agent and two GPU dies).
    assert int(run.stdout.splitlines()[-1]) >= 2, run.stdout


def test_a_second_rocm_module_is_refused_by_environment_modules_and_swapped_by_lmod(hosts):
    envmod = login(hosts[ENVMOD_HOST], "module load rocm/%s; module load rocm/%s 2>&1; echo RC=$?; %s; module list 2>&1"
                   % (OTHER, DEFAULT, SHOW))
    # Environment Modules' conflict: the second load fails and the first stays.
    assert "Module cannot be loaded due to a conflict" in envmod.stdout, envmod.stdout
    got = values(envmod.stdout)
    assert got["RC"] != "0" and got["ROCM_PATH"] == "/opt/rocm-" + OTHER, envmod.stdout
    lmod = login(hosts[LMOD_HOST], "module load rocm/%s; module load rocm/%s 2>&1; echo RC=$?; %s" % (OTHER, DEFAULT,
                                                                                                      SHOW))
    # Lmod: one module of a name at a time, the second replaces the first.
    assert re.search(r"rocm/%s => rocm/%s" % (OTHER, DEFAULT), lmod.stdout), lmod.stdout
    got = values(lmod.stdout)
    assert got["RC"] == "0" and got["ROCM_PATH"] == "/opt/rocm-" + DEFAULT and got["LD"] == "", lmod.stdout
    assert got["TOOL"] == "/opt/rocm-%s/bin/rocminfo" % DEFAULT


@pytest.mark.parametrize("name", [LMOD_HOST, ENVMOD_HOST])
def test_module_purge_brings_back_the_default(hosts, name):
    run = login(hosts[name], "module load rocm/%s; module purge; %s; %s; . /etc/profile.d/rocm.sh; "
                             "echo AGAIN=$ROCM_PATH" % (OTHER, SHOW, LOADED))
    got = values(run.stdout)
    assert got["TOOL"] == "/opt/rocm/bin/rocminfo" and got["LD"] == "", run.stdout
    assert got["HIPLIB"] == "/opt/rocm-%s/lib/libamdhip64.so.6" % DEFAULT
    # Environment Modules sets ROCM_PATH back to the login value; Lmod unsets it (ROCm's tools then use /opt/rocm),
    # and the login file sets it again (docs/modules.md).
    assert got["ROCM_PATH"] == ("unset" if name == LMOD_HOST else "/opt/rocm"), run.stdout
    assert got["AGAIN"] == "/opt/rocm"


def test_the_linker_cache_holds_the_default_release_only(hosts):
    for host in hosts.values():
        conf = host.file("/etc/ld.so.conf.d/rocm.conf").content_string
        assert [line for line in conf.splitlines() if not line.startswith("#")] == ["/opt/rocm/lib", "/opt/rocm/lib64"]
        cached = host.check_output("ldconfig -p | grep 'libamdhip64.so.6 '")
        assert cached.splitlines() == ["\tlibamdhip64.so.6 (libc6,x86-64) => /opt/rocm/lib/libamdhip64.so.6"], cached


def test_check_mode_writes_nothing(hosts):
    before = dict((name, runs.snapshot(host)) for name, host in hosts.items())
    run = runs.playbook(PROVISION, BOTH, dict(SIDE_BY_SIDE, rocm_modules_state="absent"), check=True, tags="modules")
    assert run.rc == 0, run
    # The diff names each file the role would remove; nothing changes.
    for name in hosts:
        assert run.changed(name) == 1, run
        assert "%s/%s" % (FOLDER[name], OTHER) in run.output, run
    for name, host in hosts.items():
        assert runs.differences(before[name], runs.snapshot(host)) == [], name
        assert host.check_output("ls -A %s" % FOLDER[name]).split() == [".version", DEFAULT, OTHER, LAB_FILE]


def test_dropping_a_release_removes_its_modulefile_and_leaves_the_labs(hosts):
    run = runs.playbook(PROVISION, BOTH, dict(SIDE_BY_SIDE, rocm_versions=["6.2"]))
    assert run.rc == 0, run
    assert "rocm_modules : Write the modulefiles and the default marker" in run.changed_tasks(), run
    for name, host in hosts.items():
        assert host.check_output("ls -A %s" % FOLDER[name]).split() == [".version", DEFAULT, LAB_FILE]
    avail = login(hosts[ENVMOD_HOST], "module avail rocm 2>&1").stdout
    assert "rocm/%s(default)" % DEFAULT in avail and "rocm/" + OTHER not in avail, avail
