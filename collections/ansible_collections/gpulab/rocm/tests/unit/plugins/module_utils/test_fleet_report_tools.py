"""From ROCm 7 the facts prefer amd-smi over the deprecated rocm-smi, and a host whose release ships no rocm-smi is not
an error (rocm-reference.md 10 and 13: the ROCm Core SDK is dropping it). The tool facts are in the shape of the
facts modules (docs/facts.md)."""

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import gpu_tools
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.amd_smi import parse_amd_smi
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import fleet_report
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture


def node(amd_smi_driver, rocm_smi=None):
    rocminfo = gpu_tools.empty_rocminfo()
    amd = dict(gpu_tools.empty_amd_smi(), present=True, driver_version=amd_smi_driver)
    return {"os": {"distribution": "Debian", "version": "13"}, "versions": {},
            "tools": {"rocminfo": rocminfo, "amd_smi": amd, "rocm_smi": rocm_smi or gpu_tools.empty_rocm_smi()}}


def test_amd_smi_s_driver_version_wins_over_rocm_smi_s():
    rocm_smi = dict(gpu_tools.empty_rocm_smi(), present=True, driver_version="6.8.5")
    assert fleet_report.host_record(node("6.14.14", rocm_smi), "n1")["driver_version"] == "6.14.14"


def test_a_release_without_rocm_smi_is_not_a_problem():
    missing = dict(gpu_tools.empty_rocm_smi(), error="rocm-smi is not installed", error_kind="tool_missing")
    record = fleet_report.host_record(node("6.14.14", missing), "n1")
    assert not [problem for problem in record["problems"] if "rocm-smi" in problem], record["problems"]
    assert record["driver_version"] == "6.14.14"


def test_a_rocm_core_sdk_node_s_row():
    # The versions section as node_probe reads it on a Core node (test_node_probe_core.py), rocm-smi missing as the
    # probe reports it (Core 10.1 without rocm-smi), amd-smi's facts from a real capture (an MI350X, its IFWI block).
    missing = gpu_tools.read_rocm_smi(None, lambda name: None)
    amd = dict(gpu_tools.empty_amd_smi(), present=True, source="/opt/rocm/bin/amd-smi",
               **parse_amd_smi(fixture("amd-smi/static-text-mi350x-ifwi-amdsmi-dev-2026-gpu0-to-board.txt")))
    probe = {"os": {"distribution": "Ubuntu", "version": "24.04"},
             "versions": {"rocm": "10.1.0-2", "rocm_file": "/opt/rocm/core/.info/version", "amdgpu": None},
             "tools": {"rocminfo": gpu_tools.empty_rocminfo(), "amd_smi": amd, "rocm_smi": missing}}
    record = fleet_report.host_record(probe, "core1", expected_rocm_version="10.1")
    assert (record["rocm_version"], record["rocm_build"], record["driver_version"]) == ("10.1.0", "10.1.0-2", "6.18.3")
    assert record["problems"] == []
    [gpu] = record["gpus"]
    assert (gpu["model"], gpu["gfx_target"], gpu["pci_bus"], gpu["seen_by"]) == (
        "AMD Instinct MI350X", "gfx950", "0000:05:00.0", ["amd-smi"])
    assert fleet_report.valid_record(record, "core1")["rocm_build"] == "10.1.0-2"
    other = fleet_report.host_record(probe, "core1", expected_rocm_version="10.0.0")
    assert other["problems"] == ["ROCm 10.1.0 is installed, the inventory asks for 10.0.0 (rocm_version)"]
