"""rocm_verify's planner (plan_verify.py): what it fails on, and what its messages name."""

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_verify
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
