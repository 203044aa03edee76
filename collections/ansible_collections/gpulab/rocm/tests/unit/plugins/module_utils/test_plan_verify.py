"""rocm_verify's planner (plan_verify.py): what it fails on, and what its messages name; the loaded amdgpu against
the installed amdgpu-dkms over the probe's reading of fake hosts (driver_helpers.py)."""

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_verify
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.driver_helpers import (
    ARCH, DKMS_VERSION, DRIVER_VERSION, Host, NEWEST, RUNNING,
)
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import CONVERGED, inputs, probe


def pci_device(bdf, name, gfx_target, driver="amdgpu", vendor="AMD"):
    """One device as gpu_pci_facts lists it (the fields the report reads)."""
    return {"bdf": bdf, "vendor": vendor, "name": name, "gfx_target": gfx_target, "driver": driver,
            "sriov_vf": False, "link": {}}


def with_pci(node, *devices):
    node["gpu_pci"]["devices"] = list(devices)
    node["gpu_pci"]["amd"] = [dev for dev in devices if dev["vendor"] == "AMD"]
    return node


def test_verify_names_the_expected_and_the_found_gpu_count():
    plan = plan_verify.plan(probe(CONVERGED), {"expected_gfx_targets": []}, inputs(rocm_expected_gpu_count=4), {"name": "n1"})
    assert plan["problems"] == ["rocminfo lists 1 GPU agent(s), expected 4 (rocm_expected_gpu_count)"]


def test_verify_names_the_missing_and_the_found_gfx_targets():
    plan = plan_verify.plan(probe(CONVERGED), {"expected_gfx_targets": ["gfx90a", "gfx942"]}, inputs(), {"name": "n1"})
    assert plan["problems"] == ["gfx targets missing: gfx942 (rocminfo lists gfx90a)"]


def test_verify_by_default_wants_every_gpu_of_the_bus_that_rocm_runs_on():
    # The MI250X rocminfo lists (0000:d1:00.0) on the bus, beside a second one and an RX 6600 (gfx1032, runs with
    # an HSA override) that rocminfo does not list, an unknown AMD device and an NVIDIA card.
    node = with_pci(probe(CONVERGED),
                    pci_device("0000:d1:00.0", "Aldebaran/MI200 [Instinct MI250X]", "gfx90a"),
                    pci_device("0000:d6:00.0", "Aldebaran/MI200 [Instinct MI250X]", "gfx90a", driver=None),
                    pci_device("0000:0b:00.0", "Navi 23 [Radeon RX 6600]", "gfx1032"),
                    pci_device("0000:0c:00.0", "unknown device 0x1234", None),
                    pci_device("0000:41:00.0", "GH100 [H200]", None, driver="nvidia", vendor="NVIDIA"))
    plan = plan_verify.plan(node, {"expected_gfx_targets": []}, inputs(), {"name": "n1"})
    assert len(plan["problems"]) == 1, plan["problems"]
    problem = plan["problems"][0]
    assert problem.startswith("rocminfo does not list 2 of the AMD GPUs on the PCI bus that ROCm 6.2.4 runs on: "
                              "0000:0b:00.0 Navi 23 [Radeon RX 6600] (gfx1032, driver amdgpu); "
                              "0000:d6:00.0 Aldebaran/MI200 [Instinct MI250X] (gfx90a, no driver bound).")
    assert "set rocm_expected_gpu_count" in problem
    # Every GPU seen: nothing to report; an explicit count is the admin's word and replaces the bus check.
    seen = with_pci(probe(CONVERGED), pci_device("0000:d1:00.0", "Aldebaran/MI200 [Instinct MI250X]", "gfx90a"))
    assert plan_verify.plan(seen, {"expected_gfx_targets": []}, inputs(), {"name": "n1"})["problems"] == []
    assert plan_verify.plan(node, {"expected_gfx_targets": []}, inputs(rocm_expected_gpu_count=1), {"name": "n1"})[
        "problems"] == []


# --- the loaded amdgpu after a driver change and its reboot (driver_guard.loaded_findings) ------------------------

def driver_node(host, running=RUNNING, built_srcversion=None, **versions):
    """The converged probe as a bare-metal MI250X node with amdgpu-dkms 30.30.4 installed, its kernel side read
    from host (driver_helpers.py)."""
    node = with_pci(probe(CONVERGED), pci_device("0000:d1:00.0", "Aldebaran/MI200 [Instinct MI250X]", "gfx90a"))
    node["gpu_pci"]["in_container"] = False
    node["packages"] = dict(node["packages"], **{"amdgpu-dkms": ["ii ", DRIVER_VERSION]})
    node["driver"] = ns.driver_state(host.root, host.sysfs, running, ARCH, node["packages"])
    node["driver"]["running_dkms_srcversion"] = built_srcversion
    node["versions"] = dict(node["versions"], **versions)
    return node


def findings(node, version="7.2.4"):
    """verify's problems for a node whose release (7.2.4) plans driver 30.30.4, the one driver_node installs."""
    stack = inputs(rocm_version=version, rocm_kernel_driver="auto")
    return plan_verify.plan(node, {"expected_gfx_targets": []}, stack, {"name": "n1"})["problems"]


def installed_host(tmp_path, **loaded):
    host = Host(tmp_path).kernel(RUNNING, dkms=".ko.zst")
    host.tree(DKMS_VERSION, built=[RUNNING], installed=[RUNNING])
    return host.loaded(**loaded)


def test_the_dkms_build_of_the_installed_driver_loaded_is_no_finding(tmp_path):
    host = installed_host(tmp_path, version="6.16.13", srcversion="1C4E2D9F0B6A5E3C7D8A9B0", amdkcl=True)
    assert findings(driver_node(host, built_srcversion="1C4E2D9F0B6A5E3C7D8A9B0")) == []


def test_the_kernel_s_own_amdgpu_loaded_while_the_dkms_build_is_installed_is_a_problem(tmp_path):
    host = installed_host(tmp_path)  # loaded, no version file: the in-tree module
    assert findings(driver_node(host)) == [
        "the loaded amdgpu is the kernel's own (in-tree) module, not amdgpu-dkms 1:6.16.13.30300400-2341068.24.04 "
        "(DKMS amdgpu/6.16.13-2341068.24.04): DKMS built and installed it for the running kernel 6.8.0-45-generic, "
        "but the node did not load it. Fix: reboot (or modprobe -r amdgpu && modprobe amdgpu where nothing uses the "
        "GPUs)."]
    # Not built for the running kernel: the fix is the build.
    other = Host(tmp_path / "2").kernel(RUNNING).loaded()
    other.tree(DKMS_VERSION, built=[], installed=[])
    problem = findings(driver_node(other))[0]
    assert "DKMS has no build of it installed for the running kernel 6.8.0-45-generic" in problem
    assert "run dkms install amdgpu/6.16.13-2341068.24.04 -k 6.8.0-45-generic" in problem


def test_another_dkms_build_loaded_or_none_is_a_problem(tmp_path):
    host = installed_host(tmp_path, version="6.16.13", srcversion="0A0A0A0A0A0A0A0A0A0A0A0", amdkcl=True)
    assert findings(driver_node(host, built_srcversion="1C4E2D9F0B6A5E3C7D8A9B0")) == [
        "the loaded amdgpu is a DKMS build 6.16.13 (srcversion 0A0A0A0A0A0A0A0A0A0A0A0), not the one amdgpu-dkms "
        "1:6.16.13.30300400-2341068.24.04 (DKMS amdgpu/6.16.13-2341068.24.04) built for the running kernel "
        "6.8.0-45-generic (srcversion 1C4E2D9F0B6A5E3C7D8A9B0). Fix: reboot to load it."]
    # An older driver's build (6.12.12) still loaded: its version says so even where no srcversion was read.
    older = installed_host(tmp_path / "2", version="6.12.12", amdkcl=True)
    assert findings(driver_node(older))[0].startswith("the loaded amdgpu is a DKMS build 6.12.12")
    missing = Host(tmp_path / "3").kernel(RUNNING, dkms=".ko.zst")
    missing.tree(DKMS_VERSION, built=[RUNNING], installed=[RUNNING])
    assert findings(driver_node(missing))[0].startswith("amdgpu is not loaded although amdgpu-dkms")


def test_the_newest_kernel_without_a_dkms_amdgpu_is_a_problem(tmp_path):
    host = installed_host(tmp_path, version="6.16.13", amdkcl=True).kernel(NEWEST, headers=False)
    assert findings(driver_node(host)) == [
        "the newest installed kernel 6.8.0-51-generic (the one the boot loader starts by default) has no amdgpu from "
        "amdgpu-dkms 1:6.16.13.30300400-2341068.24.04 (DKMS amdgpu/6.16.13-2341068.24.04): booting it gives the "
        "kernel's own amdgpu or none. Fix: install its headers (linux-headers-6.8.0-51-generic) and run dkms install "
        "amdgpu/6.16.13-2341068.24.04 -k 6.8.0-51-generic, or remove that kernel (apt purge "
        "linux-image-6.8.0-51-generic)"]


def test_no_driver_finding_in_a_container_without_the_package_or_without_an_amd_gpu(tmp_path):
    host = installed_host(tmp_path)
    node = driver_node(host)
    node["gpu_pci"]["in_container"] = True  # it runs the host's kernel and driver
    assert findings(node) == []
    node = driver_node(host)
    del node["packages"]["amdgpu-dkms"]
    assert findings(node) == []
    node = driver_node(host)
    node["gpu_pci"]["amd"] = []
    node["gpu_pci"]["devices"] = []
    assert findings(node) == []


def test_a_node_rebooted_for_the_driver_that_came_back_without_it_is_reported_not_rebooted(tmp_path):
    # rocm_driver recorded its reboot for 30.30.4 at 2001, the node booted at 3000 with the kernel's own amdgpu:
    # verify says so and that the roles do not reboot again (test_plan_driver.py: no reboot pending).
    node = driver_node(installed_host(tmp_path), booted_at=3000, reboot_recorded_at=2001.0,
                       reboot_recorded_for="30300400")
    problem = findings(node)[0]
    assert problem.startswith("the loaded amdgpu is the kernel's own (in-tree) module")
    assert problem.endswith(
        "rocm_driver already rebooted the node for this driver (recorded 1970-01-01 00:33 UTC) and it came back "
        "without it, so the roles do not reboot it again for the same driver (that would repeat the same boot) until "
        "the installed driver changes: fix the cause, then reboot it yourself.")
    # Not yet booted since the record (the reboot was only marked): no such sentence.
    node["versions"]["booted_at"] = 1000
    assert "already rebooted" not in findings(node)[0]


def test_an_installed_driver_other_than_the_planned_one_is_a_problem(tmp_path):
    host = installed_host(tmp_path, version="6.16.13", srcversion="1C4E2D9F0B6A5E3C7D8A9B0", amdkcl=True)
    node = driver_node(host, built_srcversion="1C4E2D9F0B6A5E3C7D8A9B0")
    assert findings(node, "10.1.0") == [
        "the installed amdgpu-dkms is 1:6.16.13.30300400-2341068.24.04, not the driver ROCm 10.1.0 plans (amdgpu "
        "31.50, whose versions carry .31500000-). Fix: run rocm_driver (site.yml --tags driver), which installs it"]
