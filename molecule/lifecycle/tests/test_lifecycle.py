"""The life of one node, driven by real ansible-playbook runs (the tests run in order; each leaves the host in the
state the next one starts from). Molecule's converge left molecule-lifecycle-bookworm at ROCm 5.7.1.

Every change is followed by a second run that must report changed=0.
"""

import os
import re

import pytest

from gpulab_test_helpers import gpulab_runs as runs

NODE = "molecule-lifecycle-bookworm"
FRESH = "molecule-lifecycle-fresh"
testinfra_hosts = [NODE]

CODES = {"5.7.1": "50701", "6.2.4": "60204", "6.2.0": "60200", "7.2.3": "70203"}
DIRS = {"5.7.1": "5.7.1", "6.2.4": "6.2.4", "6.2.0": "6.2", "7.2.3": "7.2.3"}
AMD_VERSION = re.compile(r"\.(\d{5})-\d+~\d+\.\d+$")


@pytest.fixture(scope="module")
def fresh():
    import testinfra
    return testinfra.get_host("ansible://" + FRESH, ansible_inventory=runs.inventory())


def rocm_packages(host):
    """{name: release code} of the installed AMD ROCm packages."""
    out = host.check_output("dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n'")
    found = {}
    for line in out.splitlines():
        status, name, version = line.split()
        match = AMD_VERSION.search(version)
        if match:
            assert status == "ii", line  # nothing half installed or left as config files
            found[name] = match.group(1)
    return found


def source_lines(host):
    lists = host.file("/etc/apt/sources.list.d/rocm.list")
    return [ln for ln in lists.content_string.splitlines() if ln.startswith("deb ")] if lists.exists else []


def opt_rocm(host):
    return host.check_output("readlink -f /opt/rocm")


def assert_single_release(host, version):
    code = CODES[version]
    packages = rocm_packages(host)
    assert {"rocm-hip-sdk", "rocblas", "miopen-hip", "rocm-core", "rocminfo", "miopen-hip-gfx90akdb"} <= set(packages)
    assert set(packages.values()) == {code}, packages  # nothing of another release is left
    assert not [name for name in packages if name.endswith(version)], packages  # plain names only
    url = os.environ["GPULAB_MIRROR_URL"]
    assert source_lines(host) == [
        f"deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] {url}/rocm/apt/{DIRS[version]} jammy main"]
    assert opt_rocm(host) == f"/opt/rocm-{version}"
    leftovers = host.check_output("ls /opt").split()
    assert leftovers == ["rocm", f"rocm-{version}"], leftovers
    # The login shell finds this release's tools through /opt/rocm.
    assert host.check_output("su - alice -c 'command -v rocminfo'") == "/opt/rocm/bin/rocminfo"
    assert host.check_output("cat /opt/rocm/.info/version").startswith(version + "-")


def converge_twice(path, extra_vars=None):
    first = runs.playbook(path, NODE, extra_vars)
    assert first.rc == 0, first
    assert first.changed(NODE) > 0, first
    second = runs.playbook(path, NODE, extra_vars)
    assert second.rc == 0, second
    assert second.changed(NODE) == 0, second
    return first


def test_check_mode_on_a_fresh_host_shows_the_changes_and_changes_nothing(fresh):
    before = runs.snapshot(fresh)
    run = runs.playbook("site.yml", FRESH, check=True)
    after = runs.snapshot(fresh)
    assert run.rc == 0, run
    assert run.changed(FRESH) > 0, run
    # The diff shows the sources line it would write.
    assert re.search(r"^\+deb \[arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg\] .*/rocm/apt/6\.2\.4 jammy main$",
                     run.output, re.M), run
    assert runs.differences(before, after) == []
    assert not fresh.file("/etc/apt/sources.list.d/rocm.list").exists


def test_check_mode_on_the_converged_host_changes_nothing(host):
    before = runs.snapshot(host)
    same = runs.playbook("site.yml", NODE, check=True)
    assert same.rc == 0, same
    assert same.changed(NODE) == 0, same
    # A move to the ROCm Core SDK in check mode: the plan shows the removal and the install before anything
    # changes (AMD's deb822 source replaces rocm.list; the legacy packages go first, then the Core ones, which apt
    # cannot resolve before the repository is written), and still nothing changes.
    other = runs.playbook("site.yml", NODE, {"rocm_version": "10.0.0"}, check=True)
    assert other.rc == 0, other
    assert re.search(r"^-deb .*/rocm/apt/5\.7\.1 jammy main$", other.output, re.M), other
    assert re.search(r"^\+URIs: .*/rocm/core/packages/debian12/$", other.output, re.M), other
    text = " ".join(other.output.split())
    assert re.search(r"remove before the install [^']*rocm-hip-sdk", text) and "would install amdrocm10.0" in text, other
    assert runs.differences(before, runs.snapshot(host)) == []
    assert_single_release(host, "5.7.1")


def test_rolling_upgrade_from_5_7_1_to_6_2_4(host):
    run = converge_twice("playbooks/upgrade.yml", {"rocm_version": "6.2.4"})
    # upgrade.yml is provision.yml with a rolling serial and max_fail_percentage.
    assert "PLAY [Provision ROCm nodes]" in run.output, run
    assert_single_release(host, "6.2.4")


def test_upgrade_from_6_2_4_to_7_keeping_6_2_4_side_by_side(host):
    """6.x -> 7.x: the graphics source appears in rocm.list, the packages move in one plan, /opt/rocm follows the new
    default and 6.2.4 stays installed because it is asked for (a container: no driver source either way)."""
    url = os.environ["GPULAB_MIRROR_URL"]
    options = "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg]"
    assert source_lines(host) == [f"{options} {url}/rocm/apt/6.2.4 jammy main"]  # the snapshot before
    converge_twice("playbooks/upgrade.yml", {"rocm_version": "7.2.3", "rocm_versions": ["7.2.3", "6.2.4"]})
    assert source_lines(host) == [f"{options} {url}/rocm/apt/7.2.3 jammy main",
                                  f"{options} {url}/graphics/7.2.3/ubuntu jammy main",
                                  f"{options} {url}/rocm/apt/6.2.4 jammy main"]
    packages = rocm_packages(host)
    assert set(packages.values()) == {"70203", "60204"}, packages
    assert {"rocm-hip-sdk7.2.3", "miopen-hip-gfx90akdb7.2.3", "rocm-hip-sdk6.2.4"} <= set(packages), packages
    assert host.check_output("ls /opt").split() == ["rocm", "rocm-6.2.4", "rocm-7.2.3"]
    assert opt_rocm(host) == "/opt/rocm-7.2.3"
    assert host.check_output("su - alice -c 'cat $ROCM_PATH/.info/version'").startswith("7.2.3-")


CORE_SOURCES = "/etc/apt/sources.list.d/amdrocm-stable.sources"
CORE_KEYRING = "/etc/apt/keyrings/amdrocm.gpg"


def core_packages(host):
    """{name: version} of the installed ROCm Core SDK packages (amdrocm*, version X.Y.Z-<build>)."""
    # dpkg-query exits 1 when no package matches: none is installed.
    out = host.run("dpkg-query -W -f '${db:Status-Abbrev} ${Package} ${Version}\\n' 'amdrocm*'").stdout
    found = {}
    for line in out.splitlines():
        status, name, version = line.split()
        if status != "un":
            assert status == "ii", line
            found[name] = version
    return found


def assert_core_release(host, series, release):
    """The node runs exactly one Core release: AMD's deb822 source and key alone, no legacy package or source."""
    packages = core_packages(host)
    # The node's target (host_vars name gfx90a: its PCI bus shows no GPU), not every target's amdrocm<X.Y>.
    assert "amdrocm%s-gfx90a" % series in packages and "amdrocm" + series not in packages, packages
    assert {version.split("-")[0] for version in packages.values()} == {release}, packages
    assert rocm_packages(host) == {}  # the legacy stream was removed first, as AMD says
    assert source_lines(host) == [] and not host.file("/etc/apt/keyrings/rocm.gpg").exists
    sources = host.file(CORE_SOURCES).content_string
    assert "URIs: %s/debian12/" % os.environ["GPULAB_MIRROR_CORE_URL"] in sources, sources
    assert host.file(CORE_KEYRING).is_file
    assert host.check_output("readlink -f /opt/rocm/core") == "/opt/rocm/core-" + series
    assert host.check_output("ls /opt/rocm").split().count("core-" + series) == 1


def test_legacy_to_the_core_sdk_removes_the_legacy_stream_first(host):
    """7.2.3 with 6.2.4 beside it -> ROCm Core SDK 10.0 (its check mode: test_check_mode_on_the_converged_host): the
    run removes both legacy releases, their sources and key, then installs 10.0 from AMD's deb822 source with its
    own key."""
    # One run: the next test's second run shows that a converged Core node changes nothing.
    run = runs.playbook("playbooks/upgrade.yml", NODE, {"rocm_version": "10.0.0"})
    assert run.rc == 0 and run.changed(NODE) > 0, run
    assert_core_release(host, "10.0", "10.0.0")
    assert host.check_output("ls /opt").split() == ["rocm"]  # /opt/rocm-7.2.3 and /opt/rocm-6.2.4 went


def test_core_10_0_to_10_1_is_an_ordinary_upgrade(host):
    converge_twice("playbooks/upgrade.yml", {"rocm_version": "10.1.0"})
    assert_core_release(host, "10.1", "10.1.0")
    assert not host.file("/opt/rocm/core-10.0").exists


# The default is the lower release, so /opt/rocm must be set (rocm-core alone would pick the highest).
SIDE_BY_SIDE = {"rocm_version": "6.2", "rocm_versions": ["6.2.4", "6.2"]}


def test_side_by_side_releases_with_a_default_and_the_way_back_from_the_core_sdk(host):
    """From Core SDK 10.1 back to the legacy stream, two releases side by side: the Core packages, their source and
    key go first; the legacy stream comes back whole."""
    converge_twice("site.yml", SIDE_BY_SIDE)
    assert core_packages(host) == {}
    assert not host.file(CORE_SOURCES).exists and not host.file(CORE_KEYRING).exists
    assert not host.file("/opt/rocm/core").exists
    packages = rocm_packages(host)
    for version in ("6.2.4", "6.2.0"):
        for name in ("rocm-hip-sdk", "rocblas", "miopen-hip", "rocm-core", "rocminfo", "miopen-hip-gfx90akdb"):
            assert packages.get(name + version) == CODES[version], packages
    assert set(packages.values()) == {"60204", "60200"}, packages
    # Plain names are gone: they would collide with the versioned packages of the same release.
    assert all(name.endswith(("6.2.4", "6.2.0")) for name in packages), packages
    url = os.environ["GPULAB_MIRROR_URL"]
    assert source_lines(host) == [
        f"deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg] {url}/rocm/apt/{d} jammy main" for d in ("6.2", "6.2.4")]
    assert host.check_output("ls /opt").split() == ["rocm", "rocm-6.2.0", "rocm-6.2.4"]
    query = host.check_output("update-alternatives --query rocm")
    assert "Status: manual" in query and "Value: /opt/rocm-6.2.0" in query, query
    assert opt_rocm(host) == "/opt/rocm-6.2.0"
    # The environment follows the default release.
    assert host.check_output("su - alice -c 'cat $ROCM_PATH/.info/version'").startswith("6.2.0-")
    assert host.check_output("su - alice -c 'command -v rocminfo'") == "/opt/rocm/bin/rocminfo"


def test_dropping_a_release_removes_it(host):
    converge_twice("site.yml", {"rocm_version": "6.2", "rocm_versions": ["6.2"]})
    packages = rocm_packages(host)
    assert set(packages.values()) == {"60200"}, packages
    assert "rocm-hip-sdk6.2.0" in packages
    assert host.check_output("ls /opt").split() == ["rocm", "rocm-6.2.0"]
    assert opt_rocm(host) == "/opt/rocm-6.2.0"
    assert len(source_lines(host)) == 1 and "/rocm/apt/6.2 jammy" in source_lines(host)[0]


def test_a_core_release_the_table_lacks_installs_from_its_repository_s_index(host):
    # 10.2.0 is in the fixture mirror only (recipes.py): the plan names amdrocm10.2 from the Core scheme and apt's
    # signed index of the stream (through the pinned key) has it. No driver in a container, so no window is needed.
    # One run: a second changing nothing is shown for 10.1; the uninstall below starts from here.
    run = runs.playbook("playbooks/upgrade.yml", NODE, {"rocm_version": "10.2.0"})
    assert run.rc == 0 and run.changed(NODE) > 0, run
    assert_core_release(host, "10.2", "10.2.0")


def test_uninstall_removes_everything_we_added_and_keeps_the_rest(host, fresh):
    # The admin's and the user's own lines, which must survive.
    host.check_output("sh -c 'echo \"# lab policy: keep\" >> /etc/adduser.conf'")
    host.check_output("sh -c 'echo \"alias ll=\\\"ls -l\\\"\" >> /home/alice/.bashrc'")
    # What the run installed beyond ROCm: the health check (on by default) and its shared node code.
    assert host.file("/usr/sbin/gpulab-gpu-health").exists and host.file("/etc/gpulab/health.json").exists
    assert host.file("/usr/lib/gpulab/python").is_directory
    run = runs.playbook("playbooks/uninstall.yml", NODE)
    assert run.rc == 0, run
    assert run.changed(NODE) > 0, run
    # Our paths (programs, node code, data, state, CDI specs, systemd units) as on the never-converged host.
    assert our_paths(host) == our_paths(fresh)
    assert rocm_packages(host) == {}
    assert core_packages(host) == {}  # from the Core SDK release of the test before
    for path in ("/etc/apt/sources.list.d/rocm.list", "/etc/apt/sources.list.d/amdgpu.list", CORE_SOURCES,
                 "/etc/apt/preferences.d/rocm-pin-600", "/etc/apt/keyrings/rocm.gpg", CORE_KEYRING,
                 "/etc/profile.d/rocm.sh", "/etc/ld.so.conf.d/rocm.conf", "/opt/rocm"):
        assert not host.file(path).exists, path
    # dpkg removes /opt with the last package in it when no package of the image owns it (debootstrap minbase).
    assert host.run("ls -A /opt").stdout == ""
    for name in ("rocm", "amdrocm-core"):  # the legacy one, and the fixture's Core one (recipes.py)
        assert "no alternatives for " + name in host.run("update-alternatives --query " + name).stderr
    # What is left is the image's own file plus the admin's line, and the user's .bashrc plus the user's line
    # (the never-converged host has the same image and the same users).
    assert host.file("/etc/adduser.conf").content_string == (
        fresh.file("/etc/adduser.conf").content_string + "# lab policy: keep\n")
    assert host.file("/home/alice/.bashrc").content_string == (
        fresh.file("/home/alice/.bashrc").content_string + 'alias ll="ls -l"\n')
    apt = host.run("apt-get update")
    assert apt.rc == 0 and "E:" not in apt.stderr, apt.stderr
    again = runs.playbook("playbooks/uninstall.yml", NODE)
    assert again.rc == 0, again
    assert again.changed(NODE) == 0, again


# Every path this project installs outside ROCm's packages (docs/lifecycle.md, uninstall).
OUR_PATHS = ("/usr/sbin/gpulab-*", "/usr/local/sbin/gpulab-*", "/usr/lib/gpulab", "/etc/gpulab", "/var/lib/gpulab",
             "/etc/cdi", "/var/run/cdi", "/etc/systemd/system/gpulab-*",
             "/etc/systemd/system/prometheus-node-exporter.service.d", "/var/lib/prometheus/node-exporter/gpulab.prom")


def our_paths(host):
    """Each of OUR_PATHS that exists, with everything under it (type, mode, owner, path)."""
    return host.check_output("sh -c 'for p in %s; do [ -e \"$p\" ] || [ -L \"$p\" ] || continue; "
                             "find \"$p\" -xdev -printf \"%%y %%m %%u %%p\\n\"; done | LC_ALL=C sort'"
                             % " ".join(OUR_PATHS)).splitlines()
