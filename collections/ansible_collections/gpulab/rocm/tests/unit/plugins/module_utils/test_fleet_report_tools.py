"""From ROCm 7 the facts prefer amd-smi over the deprecated rocm-smi, and a host whose release ships no rocm-smi is not
an error (rocm-reference.md 10). The tool facts are in the shape of the facts modules (docs/facts.md)."""

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import gpu_tools
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import fleet_report


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
