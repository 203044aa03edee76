"""rocm_driver's planner (plan_driver.py): the driver pinned to its own number from the release table, bad
package names refused where no driver is wanted too, the reboot plan; the DKMS driver guard (driver_guard.py) with
every refusal, passing and failing, over the probe's reading of fake hosts (driver_helpers.py), the removal of AMD's
old DKMS trees, and no second reboot for the same driver."""

import os
import shutil

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import driver_guard, plan_driver, plan_pass, rocm_release
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.driver_helpers import (
    ARCH, DKMS_VERSION, DRIVER_VERSION, Host, NEWEST, OLD_DKMS_VERSION, RUNNING, ubuntu_host,
)
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import FRESH, default_inputs, fresh, inputs, probe


@pytest.mark.parametrize("version, code, other", [
    ("7.2.3", "30300300", "1:6.8.5.60204-2044426.24.04"),
    # The Core SDK's 31.x driver keeps the 8-digit code (6.19.14.31400000 is 31.40.0; rocm-reference.md 13).
    ("10.1.0", "31500000", "1:6.14.14.30300300-2200000.24.04"),
])
def test_the_driver_plan_pins_the_driver_s_own_number(version, code, other):
    wanted = {"packages": ["amdgpu-dkms"], "headers_package": "", "reboot": True}
    driver = plan_driver.plan(fresh(), wanted, default_inputs(rocm_version=version))
    assert driver["install"] == ["amdgpu-dkms=*.%s-*" % code]
    node = fresh()
    node["packages"] = {"amdgpu-dkms": ["ii ", "1:6.14.14.%s-2200000.24.04" % code]}
    assert plan_driver.plan(node, wanted, default_inputs(rocm_version=version))["install"] == []
    node["packages"] = {"amdgpu-dkms": ["ii ", other]}
    assert plan_driver.plan(node, wanted, default_inputs(rocm_version=version))["install"] == [
        "amdgpu-dkms=*.%s-*" % code]


def test_bad_driver_package_names_are_refused_where_the_driver_is_not_wanted_too():
    # A container does not get the driver; its bad names are still bad input, refused at the gate.
    node = probe(FRESH)
    with pytest.raises(PlanError, match=r"^rocm_driver: not Debian package names: 'amdgpu-dkms;reboot'\.$"):
        plan_driver.plan(node, {"packages": ["amdgpu-dkms;reboot"], "headers_package": "auto", "reboot": True},
                         inputs())
    assert plan_driver.plan(node, {"packages": ["amdgpu-dkms"], "headers_package": "auto", "reboot": True},
                            inputs())["wanted"] is False


@pytest.mark.parametrize("allows, conn, host_id, ctl_id, container, allowed", [
    (True, "ssh", "a", "b", False, True),       # allowed: reboot
    (False, "ssh", "a", "b", False, False),     # policy says no
    (True, "local", "a", "b", False, False),    # local connection
    (True, "ssh", "a\n", "a", False, False),    # the control node itself, reached over ssh
    (True, "ssh", "", "", True, False),         # a container
])
def test_reboot_plan(allows, conn, host_id, ctl_id, container, allowed):
    plan = plan_driver.reboot_plan(allows, conn, host_id, ctl_id, container)
    assert plan["allowed"] is allowed
    assert ("reboot it yourself" in plan["reason"]) is not allowed


# --- the DKMS driver guard (driver_guard.py): refused before any change to the driver's packages -----------------

GUARD = {"packages": ["amdgpu-dkms"], "headers_package": "auto", "reboot": True, "kernel_check": "strict",
         "kernel_max": "", "boot_min_free_mb": 300, "dkms_min_free_mb": 1024, "kernel_root": "/"}
PLENTY = 50 << 30


def guarded(host, packages=None, listed=(), lists_empty=False, free=PLENTY, headers_packages=True):
    """An Ubuntu 24.04 bare-metal node whose kernel side is the probe's reading of host: dkms installed, the headers
    package of each kernel whose build folder has headers (headers_packages), the given packages (none of the driver
    by default: a fresh install), apt's lists offering the headers in listed."""
    node = fresh("Ubuntu", "24.04")
    node["packages"] = dict({"dkms": ["ii ", "3.0.11-1ubuntu13"]}, **(packages or {}))
    node["driver"] = ns.driver_state(host.root, host.sysfs, RUNNING, ARCH, node["packages"])
    for kernel in node["driver"]["kernels"] if headers_packages else []:
        if kernel["headers_present"]:
            node["packages"][kernel["headers_package"]] = ["ii ", "6.8.0-45.45"]
    node["driver"]["root"] = "/"  # read as a host's own root (dkms may run on it)
    for path in node["driver"]["free"]:
        node["driver"]["free"][path].update(free_bytes=free, error=None)
    names = ns.headers_packages(host.root, RUNNING)
    policy = dict((name, {"installed": node["packages"].get(name, [None, None])[1],
                          "candidate": "listed" if name in listed else None}) for name in names)
    node["apt"] = {"headers_package": "linux-headers-" + RUNNING, "lists_empty": lists_empty, "policy": policy}
    return node


def driver_plan(node, version="7.2.4", **wanted):
    return plan_driver.plan(node, dict(GUARD, **wanted), default_inputs(rocm_version=version))


def refusal(node, version="7.2.4", **wanted):
    with pytest.raises(PlanError) as caught:
        driver_plan(node, version, **wanted)
    return caught.value.problems


def test_an_installable_kernel_s_headers_are_installed_with_the_driver(tmp_path):
    # 6.8.0-51 (the newest kernel) has no headers installed, and apt offers them: installed before the driver.
    node = guarded(ubuntu_host(tmp_path), listed=["linux-headers-" + NEWEST])
    plan = driver_plan(node)
    assert plan["install"] == ["linux-headers-" + NEWEST, "amdgpu-dkms=*.30300400-*"]
    # No lists yet (the first refresh brings them): whether apt has them is known only then, so asked for.
    assert driver_plan(guarded(ubuntu_host(tmp_path / "2"), lists_empty=True))["install"][0] == \
        "linux-headers-" + NEWEST
    # rocm_driver_headers_package empty: the kernels ship headers another way; none installed.
    assert driver_plan(node, headers_package="")["install"] == ["amdgpu-dkms=*.30300400-*"]


def test_a_kernel_whose_headers_cannot_be_installed_is_refused_before_any_change(tmp_path):
    node = guarded(ubuntu_host(tmp_path))
    assert refusal(node) == [
        "rocm_driver: kernel 6.8.0-51-generic is installed, but its headers (linux-headers-6.8.0-51-generic) are "
        "neither installed nor offered by apt's sources: DKMS cannot build amdgpu for it, and booting it gives no "
        "DKMS amdgpu. Fix: add the distribution's archive (or a mirror of it) that has them, install "
        "linux-headers-6.8.0-51-generic, or remove that kernel (apt purge linux-image-6.8.0-51-generic)"]
    # Headers present in the kernel's build folder (a kernel built by hand) are enough.
    host = ubuntu_host(tmp_path / "own")
    node = guarded(host)
    os.makedirs(host.at("/lib/modules/%s/build/include" % NEWEST))
    node["driver"]["kernels"][1]["headers_present"] = ns.kernel_headers_present(host.root, NEWEST)
    assert driver_plan(node)["install"] == ["amdgpu-dkms=*.30300400-*"]


def test_nothing_is_refused_when_nothing_changes(tmp_path):
    # The driver in place (30.30.4), the same kernel without installable headers: no change, so no guard.
    node = guarded(ubuntu_host(tmp_path), packages={"amdgpu-dkms": ["ii ", DRIVER_VERSION]})
    plan = driver_plan(node)
    assert plan["install"] == [] and plan["dkms_remove"] == ["amdgpu/" + OLD_DKMS_VERSION]


@pytest.mark.parametrize("kernel, version, verdict", [
    ("6.17.0-8-generic", "7.2.4", None),          # 30.30: up to 6.17
    ("6.18.7-061807-generic", "7.2.4", "6.17"),  # ROCm/ROCm#5905
    ("7.0.0-22-generic", "7.2.4", "6.17"),       # ROCm/ROCm#6193
    ("7.0.0-22-generic", "7.14.1", None),        # 31.40: Ubuntu 26.04's 7.0
    ("7.0.0-22-generic", "10.1.0", None),        # 31.50
    ("6.17.0-5-generic", "7.0.2", "6.14"),       # 30.10: up to 6.14
    ("5.4.0-200-generic", "7.2.4", "older"),     # below Ubuntu 22.04's 5.15
])
def test_a_kernel_outside_the_driver_s_range_is_refused(tmp_path, kernel, version, verdict):
    host = Host(tmp_path).kernel(kernel)
    problems = []
    try:
        driver_plan(guarded(host, listed=["linux-headers-" + RUNNING]), version)
    except PlanError as exc:
        problems = exc.problems
    if verdict is None:
        assert problems == []
    elif verdict == "older":
        assert problems == ["rocm_driver: kernel 5.4.0-200-generic is older than amdgpu 30.30.4 (ROCm 7.2.4, DKMS "
                            "module 6.16.13) supports on Debian and Ubuntu (5.15 or later). Fix: boot a supported "
                            "kernel and remove that kernel (apt purge linux-image-5.4.0-200-generic), or set "
                            "rocm_driver_kernel_check: warn to try it anyway"]
    else:
        assert len(problems) == 1 and problems[0].startswith(
            "rocm_driver: kernel %s is newer than amdgpu %s" % (kernel, rocm_release.release(version)["amdgpu_dir"]))
        assert "the newest kernel series for it is %s" % verdict in problems[0]
        assert "apt purge linux-image-%s" % kernel in problems[0]


def test_the_range_message_names_the_releases_whose_driver_builds_on_that_kernel(tmp_path):
    problems = refusal(guarded(Host(tmp_path).kernel("7.0.0-22-generic")))
    assert problems[0] == (
        "rocm_driver: kernel 7.0.0-22-generic is newer than amdgpu 30.30.4 (ROCm 7.2.4, DKMS module 6.16.13) builds "
        "on: the newest kernel series for it is 6.17 (inferred; docs/hardware.md has the sources), so DKMS would fail "
        "to build amdgpu for it and leave apt with amdgpu-dkms half configured. Fix: remove that kernel (apt purge "
        "linux-image-7.0.0-22-generic) and keep a kernel of 6.17 or older, or choose a ROCm release whose driver "
        "builds on 7.0: 31.40 (ROCm 7.14.0, 7.14.1); 31.50 (ROCm 10.0.0, 10.1.0), or set rocm_driver_kernel_max (or "
        "rocm_driver_kernel_check: warn) to try it anyway")


def test_an_admin_may_widen_the_range_or_only_be_warned(tmp_path):
    node = guarded(Host(tmp_path).kernel(RUNNING).kernel("6.18.7-061807-generic"))
    plan = driver_plan(node, kernel_max="6.18")
    assert plan["install"] == ["amdgpu-dkms=*.30300400-*"]
    assert plan["notices"] == ["rocm_driver_kernel_max 6.18 widens the newest kernel of amdgpu 30.30 beyond the 6.17 "
                               "the table knows (inferred): the DKMS build may fail there"]
    warned = driver_plan(node, kernel_check="warn")
    assert warned["install"] and warned["notices"][0].startswith("kernel 6.18.7-061807-generic is newer than")
    assert driver_plan(node, kernel_check="ignore")["notices"] == []
    with pytest.raises(PlanError, match="rocm_driver_kernel_check is 'off'; use one of strict, warn, ignore"):
        driver_plan(node, kernel_check="off")
    with pytest.raises(PlanError, match="rocm_driver_kernel_max is '6.18.7'; give a kernel series such as '6.18'"):
        driver_plan(node, kernel_max="6.18.7")


def test_a_driver_the_table_has_no_range_for_is_not_checked_and_says_so(tmp_path):
    plan = driver_plan(guarded(Host(tmp_path).kernel("7.0.0-22-generic")), "6.2.4")
    assert "the kernel range of amdgpu 6.2.4 (ROCm 6.2.4) is not in the table" in plan["notices"][0]


def test_a_foreign_amdgpu_dkms_tree_is_refused_with_its_fix(tmp_path):
    host = Host(tmp_path).kernel(RUNNING)
    host.tree("6.10-custom", source="/home/lab/ROCK-Kernel-Driver")
    assert refusal(guarded(host)) == [
        "rocm_driver: a DKMS tree amdgpu/6.10-custom is not one of AMD's amdgpu-dkms packages (its source is "
        "/home/lab/ROCK-Kernel-Driver): it would build the amdgpu module beside the driver this release installs, and "
        "which one loads depends on the order DKMS installs them. Fix: dkms remove amdgpu/6.10-custom --all, and "
        "remove the package or folder that added it (dpkg -S /home/lab/ROCK-Kernel-Driver)"]


def test_another_module_or_a_file_that_provides_amdgpu_is_refused(tmp_path):
    host = Host(tmp_path).kernel(RUNNING, dkms=".ko.zst").kernel(NEWEST, dkms=".ko.zst")
    host.tree("1.0", module="amdgpu-oem", built=[RUNNING], installed=[RUNNING])
    problems = refusal(guarded(host, listed=["linux-headers-" + NEWEST]))
    assert problems == [
        "rocm_driver: the DKMS module amdgpu-oem/1.0 builds an amdgpu.ko (for 6.8.0-45-generic): another amdgpu beside "
        "AMD's amdgpu-dkms. Fix: dkms remove amdgpu-oem/1.0 --all, and remove the package that added it (dpkg -S "
        "/usr/src/amdgpu-oem-1.0)",
        "rocm_driver: /lib/modules/6.8.0-51-generic/updates/dkms/amdgpu.ko.zst is an amdgpu module that no DKMS tree "
        "installed (a package or a copy put it there): it would load instead of the driver this release installs. "
        "Fix: find its package (dpkg -S /lib/modules/6.8.0-51-generic/updates/dkms/amdgpu.ko.zst) and remove it, or "
        "delete the file and run depmod -a 6.8.0-51-generic"]


def test_amd_s_own_trees_are_no_foreign_module(tmp_path):
    # The installed driver's tree, an old one (cleaned up instead) and one whose source link is gone.
    node = guarded(ubuntu_host(tmp_path), listed=["linux-headers-" + NEWEST])
    assert driver_guard.foreign_modules(node) == []


@pytest.mark.parametrize("path, free_mib, needed, key", [
    ("/boot", 212, 300, "boot_min_free_mb"),
    ("/var/lib/dkms", 700, 1024, "dkms_min_free_mb"),
])
def test_too_little_free_space_is_refused_with_the_figures(tmp_path, path, free_mib, needed, key):
    node = guarded(Host(tmp_path).kernel(RUNNING))
    node["driver"]["free"][path].update(free_bytes=free_mib << 20)
    problems = refusal(node)
    assert len(problems) == 1 and problems[0].startswith(
        "rocm_driver: %s has %d MiB free (filesystem of %s), %d MiB needed (rocm_driver_%s): " % (
            path, free_mib, path, needed, key))
    assert ("apt autoremove --purge" if path == "/boot" else "apt clean") in problems[0]
    # Enough, or the check turned off (0): the install goes on.
    assert driver_plan(node, **{key: free_mib})["install"] and driver_plan(node, **{key: 0})["install"]
    node["driver"]["free"][path].update(free_bytes=None, error="cannot read the free space of %s: denied" % path)
    assert refusal(node)[0].endswith("the free space there is unknown, so it cannot be checked (rocm_driver_%s)" % key)


def test_the_gate_lists_every_problem_of_the_guard_as_its_own(tmp_path):
    host = Host(tmp_path).kernel(RUNNING).kernel("7.0.0-22-generic", headers=False)
    host.tree("6.10-custom", source="/opt/custom/amdgpu")
    node = guarded(host)
    node["driver"]["free"]["/boot"].update(free_bytes=10 << 20)
    with pytest.raises(PlanError) as caught:
        driver_plan(node)
    problems = caught.value.problems
    assert [problem.split(" ")[1:3] for problem in problems] == [
        ["kernel", "7.0.0-22-generic"], ["kernel", "7.0.0-22-generic"], ["a", "DKMS"], ["/boot", "has"]]
    # The plan action records each for the gate (plugins/action/plan.py): one numbered entry per problem.
    message = plan_pass.gate_message("node1", "7.2.4", plan_pass.record({}, "driver", refusals=problems))
    assert message.startswith("node1 is not ready for ROCm 7.2.4: 4 problems, found by planning every phase before "
                              "any change, so nothing was changed. (1) driver: kernel 7.0.0-22-generic is installed")
    assert "(4) driver: /boot has 10 MiB free" in message and "rocm_driver: " not in message
    assert str(caught.value).startswith("rocm_driver: kernel 7.0.0-22-generic is installed")


@pytest.mark.parametrize("package, dkms", [
    ("1:6.16.13.30300400-2341068.24.04", "6.16.13-2341068.24.04"),  # both in ROCm/ROCm#6193
    ("1:6.12.12.60401-2164967.24.04", "6.12.12-2164967.24.04"),  # ROCm/amdgpu#192
    ("1:6.8.5.60200-2009582.24.04", "6.8.5-2009582.24.04"),  # ROCm/ROCm#3762 and the make.log path of #3701
    ("1:6.19.4.31300000-2337710.26.04", "6.19.4-2337710.26.04"),  # ROCm/amdgpu#220's package
    ("2.4.131-1", None),  # not amdgpu-dkms's form
    (None, None),
])
def test_the_dkms_tree_of_an_amdgpu_dkms_package(package, dkms):
    assert driver_guard.dkms_version(package) == dkms


# --- AMD's old DKMS trees: removed in the same plan ------------------------------------------------------------------

def test_old_dkms_trees_of_amd_s_driver_are_removed_and_then_nothing_changes(tmp_path):
    # An upgrade from 30.30.4 to 10.1.0's 31.50, with two trees of older drivers left behind.
    host = ubuntu_host(tmp_path)
    host.tree("6.12.12-2164967.24.04", built=[NEWEST])  # an older driver's tree, still built for a kernel
    node = guarded(host, packages={"amdgpu-dkms": ["ii ", DRIVER_VERSION]}, listed=["linux-headers-" + NEWEST])
    plan = driver_plan(node, "10.1.0")
    assert plan["install"] == ["linux-headers-" + NEWEST, "amdgpu-dkms=*.31500000-*"]
    # The installed driver's own tree stays (its package's prerm removes it on the upgrade).
    assert plan["dkms_remove"] == ["amdgpu/" + OLD_DKMS_VERSION, "amdgpu/6.12.12-2164967.24.04"]
    reasons = dict((change["change"], change["reason"]) for change in plan["changes"])
    assert reasons["dkms remove amdgpu/%s --all" % OLD_DKMS_VERSION] == (
        "an old DKMS tree of AMD's driver: the installed amdgpu-dkms is %s; its source is gone, and dkms fails on "
        "such a tree (ROCm/ROCm#3701)" % DKMS_VERSION)
    assert plan_driver.has_work(plan, GUARD)
    # No amdgpu-dkms installed (removed, its tree left): every tree of AMD's is an old one.
    fresh_install = driver_plan(guarded(host, listed=["linux-headers-" + NEWEST]))
    assert "amdgpu/" + DKMS_VERSION in fresh_install["dkms_remove"]
    assert "no amdgpu-dkms is installed" in fresh_install["changes"][-1]["reason"]
    # After dkms removed them: nothing to change.
    shutil.rmtree(host.at("/var/lib/dkms/amdgpu/" + OLD_DKMS_VERSION))
    shutil.rmtree(host.at("/var/lib/dkms/amdgpu/6.12.12-2164967.24.04"))
    again = driver_plan(guarded(host, packages={"amdgpu-dkms": ["ii ", DRIVER_VERSION]}))
    assert again["dkms_remove"] == [] and again["changes"] == [] and not plan_driver.has_work(again, GUARD)


def test_old_trees_wait_for_dkms_and_a_tree_read_elsewhere_is_left_alone(tmp_path):
    node = guarded(ubuntu_host(tmp_path), packages={"amdgpu-dkms": ["ii ", DRIVER_VERSION]})
    del node["packages"]["dkms"]
    plan = driver_plan(node)
    assert plan["dkms_remove"] == [] and "stay until dkms is installed" in plan["notices"][0]
    node = guarded(ubuntu_host(tmp_path / "2"), packages={"amdgpu-dkms": ["ii ", DRIVER_VERSION]})
    node["driver"]["root"] = "/srv/gpulab-kernel"
    plan = driver_plan(node)
    assert plan["dkms_remove"] == [] and "are read under /srv/gpulab-kernel, not /" in plan["notices"][0]


def test_a_probe_read_under_another_root_is_read_again_there():
    node = {"params": {"kernel_root": "/"}}
    assert plan_driver.probe_needs(node, dict(GUARD, kernel_root="/srv/k"), {}) == {
        "sections": ["driver", "apt"], "kernel_root": "/srv/k"}
    assert plan_driver.probe_needs(node, GUARD, {}) is None
    assert plan_driver.probe_needs(node, dict(GUARD, kernel_root="/srv/k"), {}, fresh={"driver"}) is None


# --- the reboot record and no second reboot for the same driver ------------------------------------------------------

def rebooted(tmp_path, **versions):
    """The node after rocm_driver installed 30.30.4 (at 2000), rebooted for it (recorded at 2001, booted at 3000)
    and the node came back with the kernel's own amdgpu."""
    host = Host(tmp_path).kernel(RUNNING, headers=True)
    host.tree(DKMS_VERSION, built=[RUNNING], installed=[RUNNING])
    host.loaded()
    node = guarded(host, packages={"amdgpu-dkms": ["ii ", DRIVER_VERSION]})
    node["gpu_pci"]["amd"] = [{"bdf": "0000:c1:00.0", "name": "Aldebaran/MI200 [Instinct MI250X]",
                               "gfx_target": "gfx90a", "driver": "amdgpu"}]
    node["versions"] = dict({"amdgpu": None, "booted_at": 3000, "driver_installed_at": 2000.0,
                             "reboot_recorded_at": 2001.0, "reboot_recorded_for": "30300400",
                             "reboot_marked": False}, **versions)
    return node


def test_the_reboot_record_names_the_driver_it_was_for(tmp_path):
    plan = driver_plan(guarded(Host(tmp_path).kernel(RUNNING)))
    assert plan["reboot_record"] == "amdgpu-dkms 30300400\n"
    # What the probe reads back from it (node_state.driver_boot_state).
    host = Host(tmp_path / "2")
    os.makedirs(host.at("/var/lib/gpulab-rocm"))
    with open(host.at(ns.DRIVER_REBOOT_RECORD), "w") as handle:
        handle.write(plan["reboot_record"])
    (tmp_path / "proc").mkdir()
    (tmp_path / "proc" / "stat").write_text("cpu 1 2 3\nbtime 3000\n")
    state = ns.driver_boot_state(host.root, str(tmp_path / "proc"), "amdgpu-dkms")
    assert state["reboot_recorded_for"] == "30300400" and state["booted_at"] == 3000
    # A record from before it named the driver (an empty file): no driver named.
    with open(host.at(ns.DRIVER_REBOOT_RECORD), "w") as handle:
        handle.write("")
    assert ns.driver_boot_state(host.root, str(tmp_path / "proc"), "amdgpu-dkms")["reboot_recorded_for"] is None


def test_a_node_that_came_back_without_the_driver_is_not_rebooted_again_for_it(tmp_path):
    node = rebooted(tmp_path)
    plan = driver_plan(node)
    assert plan["install"] == [] and plan["reboot_pending"] is False and not plan_driver.has_work(plan, GUARD)
    assert plan["notices"] == ["rocm_driver rebooted this node for amdgpu-dkms %s already and the loaded amdgpu is "
                               "another one (no version: the kernel's own): it is not rebooted again for the same "
                               "driver (rocm_verify reports it)" % DRIVER_VERSION]
    # Even when the same driver is unpacked again after that boot (apt install --reinstall): no second reboot.
    node["versions"]["driver_installed_at"] = 4000.0
    assert driver_plan(node)["reboot_pending"] is False
    # A record for another driver (30.30.3): this one was never rebooted for, so it is.
    node["versions"]["reboot_recorded_for"] = "30300300"
    assert driver_plan(node)["reboot_pending"] is True
    # The installed driver changes (30.30.3 to 30.30.4 again is a change): installed and rebooted once more.
    node["packages"]["amdgpu-dkms"] = ["ii ", "1:6.16.13.30300300-2327507.24.04"]
    assert driver_plan(node)["install"] == ["amdgpu-dkms=*.30300400-*"]
