"""The probe's kernel side (node_state.driver_state, node_probe's driver section) over a fake root laid out as
Ubuntu's kernel packages and dkms lay it out (driver_helpers.py): the installed kernels, their headers and amdgpu
modules, every DKMS tree, the loaded amdgpu, the free space; and, where Debian's dkms is at hand, the same tree as
dkms itself reads it (`dkms status`) and removes it (`dkms remove ... --all`, what rocm_driver runs)."""

import os
import shutil
import subprocess

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.modules.node_probe import Probe
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.driver_helpers import (
    ARCH, DKMS_VERSION, Host, NEWEST, OLD_DKMS_VERSION, RUNNING, ubuntu_host, write,
)

PACKAGES = {"amdgpu-dkms": ["ii ", "1:6.16.13.30300400-2341068.24.04"],
            "linux-image-6.8.0-45-generic": ["ii ", "6.8.0-45.45"],
            "linux-image-unsigned-6.8.0-51-generic": ["ii ", "6.8.0-51.52"]}


def test_the_installed_kernels_are_the_module_folders_with_a_modules_dep(tmp_path):
    host = ubuntu_host(tmp_path).leftover("6.5.0-1-generic").kernel("6.8.0-101-generic", headers=False)
    os.symlink("6.8.0-45-generic", host.at("/lib/modules/6.8.0-45-link"))
    # Oldest first, numbers by value (101 after 51); a folder a removed kernel left (no modules.dep) and a link are
    # no kernel.
    assert ns.installed_kernels(host.root) == [RUNNING, NEWEST, "6.8.0-101-generic"]
    assert ns.headers_packages(host.root, "6.1.0-9-amd64") == [
        "linux-headers-6.1.0-9-amd64", "linux-headers-6.8.0-45-generic", "linux-headers-6.8.0-51-generic",
        "linux-headers-6.8.0-101-generic"]
    assert ns.installed_kernels(str(tmp_path / "nothing")) == []


def test_the_kernel_side_of_an_ubuntu_host(tmp_path):
    host = ubuntu_host(tmp_path)
    state = ns.driver_state(host.root, host.sysfs, RUNNING, ARCH, PACKAGES)
    assert state["running"] == RUNNING and state["arch"] == ARCH and state["root"] == host.root
    assert state["kernels"] == [
        {"release": RUNNING, "headers_package": "linux-headers-" + RUNNING, "headers_present": True,
         "image_package": "linux-image-" + RUNNING,
         "amdgpu_in_tree": "/lib/modules/%s/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst" % RUNNING,
         "amdgpu_dkms": "/lib/modules/%s/updates/dkms/amdgpu.ko.zst" % RUNNING},
        {"release": NEWEST, "headers_package": "linux-headers-" + NEWEST, "headers_present": False,
         "image_package": "linux-image-unsigned-" + NEWEST,
         "amdgpu_in_tree": "/lib/modules/%s/kernel/drivers/gpu/drm/amd/amdgpu/amdgpu.ko.zst" % NEWEST,
         "amdgpu_dkms": None}]
    assert state["dkms"] == [
        {"module": "amdgpu", "version": DKMS_VERSION, "source": "/usr/src/amdgpu-" + DKMS_VERSION, "source_ok": True,
         "built": ["%s/%s" % (RUNNING, ARCH)], "installed": ["%s/%s" % (RUNNING, ARCH)],
         "amdgpu_ko": {"%s/%s" % (RUNNING, ARCH): "amdgpu.ko.zst"}},
        {"module": "amdgpu", "version": OLD_DKMS_VERSION, "source": "/usr/src/amdgpu-" + OLD_DKMS_VERSION,
         "source_ok": False, "built": [], "installed": [], "amdgpu_ko": {}}]
    assert state["dkms_cut"] is False
    assert state["loaded"] == {"present": True, "initstate": "live", "version": "6.16.13",
                               "srcversion": "1C4E2D9F0B6A5E3C7D8A9B0", "amdkcl": True}
    for path in ("/boot", "/var/lib/dkms"):
        assert state["free"][path]["checked"] == path and state["free"][path]["free_bytes"] > 0
    # The module a reboot loads: the one DKMS built for the running kernel in the tree installed for it.
    assert ns.running_dkms_module(state) == "/var/lib/dkms/amdgpu/%s/%s/%s/module/amdgpu.ko.zst" % (
        DKMS_VERSION, RUNNING, ARCH)


def test_the_kernel_s_own_amdgpu_has_no_version_file_and_a_missing_module_nothing(tmp_path):
    host = Host(tmp_path).loaded()
    assert ns.loaded_module(host.sysfs) == {"present": True, "initstate": "live", "version": None,
                                            "srcversion": None, "amdkcl": False}
    assert ns.loaded_module(str(tmp_path / "empty"))["present"] is False


def test_a_link_is_resolved_under_the_root_and_never_followed_out_of_it(tmp_path):
    # The build link of a kernel names /usr/src/...: the fake root's, not this machine's (which may have headers).
    host = Host(tmp_path).kernel("6.12.43+deb13-amd64", headers=False)
    os.symlink("/usr/src/linux-headers-6.12.43+deb13-amd64", host.at("/lib/modules/6.12.43+deb13-amd64/build"))
    assert ns.kernel_headers_present(host.root, "6.12.43+deb13-amd64") is False
    os.makedirs(host.at("/usr/src/linux-headers-6.12.43+deb13-amd64/include"))
    assert ns.kernel_headers_present(host.root, "6.12.43+deb13-amd64") is True
    # A DKMS tree made with dkms --dkmstree/--sourcetree inside the root links into the root: read as the host path.
    host.tree("6.10.5-2084815.24.04", source=host.at("/usr/src/amdgpu-6.10.5-2084815.24.04"))
    tree = ns.dkms_trees(host.root)[0][0]
    assert tree["source"] == "/usr/src/amdgpu-6.10.5-2084815.24.04" and tree["source_ok"] is True


def test_another_dkms_module_that_builds_an_amdgpu_is_seen(tmp_path):
    host = Host(tmp_path).kernel(RUNNING, dkms=".ko")
    host.tree("1.0", module="amdgpu-custom", built=[RUNNING], installed=[RUNNING], ko=".ko")
    host.tree("4.2.1", module="zfs", built=[RUNNING], installed=[RUNNING], ko=None)
    trees = dict((tree["module"], tree) for tree in ns.dkms_trees(host.root)[0])
    assert trees["amdgpu-custom"]["amdgpu_ko"] == {"%s/%s" % (RUNNING, ARCH): "amdgpu.ko"}
    assert trees["zfs"]["amdgpu_ko"] == {} and trees["zfs"]["installed"] == ["%s/%s" % (RUNNING, ARCH)]


def test_the_listings_are_bounded(tmp_path, monkeypatch):
    host = Host(tmp_path)
    for number in range(5):
        host.tree("6.16.%d-1.24.04" % number)
    monkeypatch.setattr(ns, "DKMS_LIMIT", 3)
    trees, cut = ns.dkms_trees(host.root)
    assert len(trees) == 3 and cut is True


# --- the probe's section, with one modinfo run -----------------------------------------------------------------------

class Module(object):
    """What Probe uses of AnsibleModule (as test_node_probe_core.py's): params and get_bin_path (opt_dirs, PATH)."""

    def __init__(self, bin_dir, **params):
        self.params = dict(tool_timeout=60, amd_smi_metric=False, **params)
        self.bin_dir = bin_dir

    def get_bin_path(self, name, opt_dirs=None, required=False):
        path = os.path.join(self.bin_dir, name)
        return path if os.path.exists(path) else None

    def warn(self, message):
        raise AssertionError(message)


def test_the_probe_reads_the_srcversion_dkms_built_for_the_running_kernel(tmp_path):
    running, arch = os.uname()[2], os.uname()[4]
    host = Host(tmp_path).kernel(running, dkms=".ko.zst")
    host.tree(DKMS_VERSION, built=[running], installed=[running])
    # A stand-in for kmod's modinfo that answers as modinfo -F srcversion does, and logs its arguments.
    bin_dir = str(tmp_path / "bin")
    log = str(tmp_path / "modinfo.log")
    write(os.path.join(bin_dir, "modinfo"), '#!/bin/sh\necho "$@" >> %s\necho 1C4E2D9F0B6A5E3C7D8A9B0\n' % log, 0o755)
    if arch != ARCH:
        pytest.skip("the fake tree is built for %s" % ARCH)
    probe = Probe(Module(bin_dir, kernel_root=host.root, sysfs_root=host.sysfs))
    probe.node["packages"] = PACKAGES
    probe.driver()
    state = probe.node["driver"]
    assert state["running_dkms_srcversion"] == "1C4E2D9F0B6A5E3C7D8A9B0"
    built = host.at("/var/lib/dkms/amdgpu/%s/%s/%s/module/amdgpu.ko.zst" % (DKMS_VERSION, running, arch))
    assert open(log).read().split() == ["-F", "srcversion", built]  # one run, on the module DKMS built
    assert [kernel["release"] for kernel in state["kernels"]] == [running]
    # No DKMS amdgpu for the running kernel: modinfo is not run.
    os.remove(log)
    other = Host(tmp_path / "other").kernel(running)
    probe = Probe(Module(bin_dir, kernel_root=other.root, sysfs_root=other.sysfs))
    probe.node["packages"] = {}
    probe.driver()
    assert probe.node["driver"]["running_dkms_srcversion"] is None and not os.path.exists(log)


# --- the same tree as dkms reads it ------------------------------------------------------------------------------------

def dkms_tool():
    """Debian's dkms: the installed one, or one unpacked where GPULAB_TEST_DKMS points (apt-get download dkms;
    dpkg-deb -x dkms_*.deb <dir>: <dir>/usr/sbin/dkms). 3.0.10 (Debian 12) was used when this was written."""
    return os.environ.get("GPULAB_TEST_DKMS") or shutil.which("dkms")


def dkms(root, *args):
    trees = ["--dkmstree", os.path.join(root, "var/lib/dkms"), "--sourcetree", os.path.join(root, "usr/src"),
             "--installtree", os.path.join(root, "lib/modules")]
    argv = [dkms_tool()] + list(args) + trees
    return subprocess.run(argv, capture_output=True, text=True, check=True).stdout


def status_lines(trees):
    """The probe's trees as `dkms status` prints them (dkms 3: module/version, kernel, arch: state)."""
    lines = []
    for tree in trees:
        if not tree["built"]:
            lines.append("%s/%s: added" % (tree["module"], tree["version"]))
        for entry in tree["built"]:
            kernel, arch = entry.split("/")
            lines.append("%s/%s, %s, %s: %s" % (tree["module"], tree["version"], kernel, arch,
                                                "installed" if entry in tree["installed"] else "built"))
    return sorted(lines)


def test_dkms_itself_reads_and_removes_the_trees_the_probe_reads(tmp_path):
    if not dkms_tool():
        pytest.skip("needs Debian's dkms (or GPULAB_TEST_DKMS)")
    host = Host(tmp_path).kernel(RUNNING, in_tree=None, dkms=".ko")
    # dkms add makes the tree and its source link as the package's postinst does (dkms_common.postinst).
    write(host.at("/usr/src/amdgpu-%s/dkms.conf" % DKMS_VERSION),
          'PACKAGE_NAME="amdgpu"\nPACKAGE_VERSION="%s"\nBUILT_MODULE_NAME[0]="amdgpu"\n'
          'DEST_MODULE_LOCATION[0]="/kernel/drivers/gpu/drm/amd/amdgpu"\nAUTOINSTALL="yes"\n' % DKMS_VERSION)
    dkms(host.root, "add", "-m", "amdgpu", "-v", DKMS_VERSION)
    # What a build and an install leave (no compiler here): the built module, the installed copy (updates/dkms on
    # Debian and Ubuntu, written by kernel(..., dkms=)) and the kernel link.
    host.tree(DKMS_VERSION, source=None, built=[RUNNING], installed=[RUNNING], ko=".ko")
    host.tree(OLD_DKMS_VERSION, source="gone")
    trees, _cut = ns.dkms_trees(host.root)
    assert sorted(dkms(host.root, "status").splitlines()) == status_lines(trees) == [
        "amdgpu/%s, %s, %s: installed" % (DKMS_VERSION, RUNNING, ARCH), "amdgpu/%s: added" % OLD_DKMS_VERSION]
    # What rocm_driver runs for an old tree whose source is gone (ROCm/ROCm#3701): dkms removes it whole.
    output = dkms(host.root, "remove", "amdgpu/%s" % OLD_DKMS_VERSION, "--all")
    assert "completely from the DKMS tree" in output
    assert [tree["version"] for tree in ns.dkms_trees(host.root)[0]] == [DKMS_VERSION]
