"""The fleet report filters (roles/rocm_report/filter_plugins/rocm_report.py) over what the gpulab.rocm facts
modules return for real captured outputs: the modules run in-process on the captures the test containers print
(tests/harness/mirror/captures), so these records are the ones the role builds on those containers."""

import base64
import json
import importlib.util
import sys
from pathlib import Path

import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.gpulab.rocm.plugins.modules import (
    amd_smi_facts, gpu_pci_facts, rocm_smi_facts, rocminfo_facts,
)
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import run_module

ROOT = Path(__file__).resolve().parents[2]
CAPTURES = ROOT / "tests" / "harness" / "mirror" / "captures"
sys.path.insert(0, str(Path(__file__).parent))
import fixture_sysfs  # noqa: E402  (the sysfs fixture builder beside this file)

_spec = importlib.util.spec_from_file_location(
    "rocm_report_filters", ROOT / "roles" / "rocm_report" / "filter_plugins" / "rocm_report.py")
report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(report)


def capture(name):
    return (CAPTURES / name).read_text(encoding="utf-8")


def src(main, name):
    """The module's result for a saved output, as the role registers it."""
    result, _runner = run_module(main, {"src": str(CAPTURES / name)})
    return result


def amd_smi(outputs):
    """amd_smi_facts run with `amd-smi <subcommand> --json` answered from captures (missing: amd-smi's usage error)."""
    def answer(argv):
        name = outputs.get(argv[1])
        if name is None:
            return 2, "", "amd-smi: error: argument : invalid choice: '%s'\n" % argv[1]
        return 0, capture(name), ""
    result, _runner = run_module(amd_smi_facts.main, {}, answer, bin_path="/opt/rocm/bin/amd-smi")
    return result


def missing(main):
    result, _runner = run_module(main, {}, bin_path=None)
    return result


def slurped(text):
    return {"content": base64.b64encode(text.encode()).decode(), "encoding": "base64", "failed": False}


NOT_FOUND = {"failed": False, "failed_when_result": False, "msg": "File not found: /sys/module/amdgpu/version"}


def no_pci(tmp_path):
    (tmp_path / "empty-sys" / "bus" / "pci" / "devices").mkdir(parents=True)
    result, _runner = run_module(gpu_pci_facts.main, {"sysfs_root": str(tmp_path / "empty-sys")})
    return result


def gathered(tmp_path, **results):
    base = {"rocminfo": missing(rocminfo_facts.main), "rocm_smi": missing(rocm_smi_facts.main),
            "amd_smi": missing(amd_smi_facts.main), "gpu_pci": no_pci(tmp_path),
            "rocm_version_file": slurped("6.2.4-139\n"), "amdgpu_version_file": NOT_FOUND,
            "os": "Debian 12.12", "kernel": "6.1.0-41-amd64"}
    base.update(results)
    return base


def test_rocminfo_only_host(tmp_path):
    host = report.report_host(gathered(tmp_path, rocminfo=src(
        rocminfo_facts.main, "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")), "gpu01")
    assert (host["gpu_count"], host["gfx_targets"], host["problems"]) == (1, ["gfx90a"], [])
    assert (host["rocm_version"], host["rocm_build"], host["driver_version"]) == ("6.2.4", "6.2.4-139", None)
    gpu = host["gpus"][0]
    assert (gpu["model"], gpu["target_id"], gpu["pci_bus"], gpu["seen_by"]) == (
        "AMD Instinct MI250X", "gfx90a:sramecc+:xnack-", "0000:d1:00.0", ["rocminfo"])
    assert gpu["vram_bytes"] == 68702699520 and gpu["link"]["source"] is None and gpu["link"]["degraded"] is None


def test_expected_count_and_release_are_checked(tmp_path):
    facts = gathered(tmp_path, rocminfo=src(rocminfo_facts.main, "rocminfo/gfx1030-rx6900xt-rocm6.4.txt"))
    assert report.report_host(facts, "ws1", 1, "6.2.4")["problems"] == []
    # The 6.2 repository folder is ROCm 6.2.0 (its rocm-core writes 6.2.0-66).
    facts_620 = dict(facts, rocm_version_file=slurped("6.2.0-66\n"))
    assert report.report_host(facts_620, "ws1", "1", "6.2")["problems"] == []
    problems = report.report_host(facts, "ws1", 2, "6.2")["problems"]
    assert problems == ["1 AMD GPU(s) found, the inventory expects 2 (rocm_expected_gpu_count)",
                        "ROCm 6.2.4 is installed, the inventory asks for 6.2 (rocm_version)"]
    with pytest.raises(AnsibleFilterError, match="expected_gpu_count must be an integer"):
        report.report_host(facts, "ws1", "four")


def test_rocm_smi_and_amd_smi_rows_merge_by_bus(tmp_path):
    # rx6600 profile: rocm-smi --showallinfo JSON and amd-smi static/metric of the same Proxmox host.
    failed_rocminfo = {"failed": False, "failed_when_result": False,
                       "msg": "Cannot read the rocminfo output: this is not rocminfo output"}
    host = report.report_host(gathered(
        tmp_path, rocminfo=failed_rocminfo,
        rocm_smi=src(rocm_smi_facts.main, "rocm-smi/json-showallinfo-rx6600-navi23-jq-reformatted.json"),
        amd_smi=amd_smi({"static": "amd-smi/static-json-rx6600-navi23-proxmox-bare-array.json",
                         "metric": "amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json"})), "ws2")
    assert host["problems"] == ["rocminfo_facts failed: Cannot read the rocminfo output: this is not rocminfo output"]
    assert host["gpu_count"] == 1 and host["driver_version"] == "7.0.0-3-pve"
    gpu = host["gpus"][0]
    assert (gpu["pci_bus"], gpu["gfx_target"], gpu["seen_by"]) == ("0000:0b:00.0", "gfx1032", ["amd-smi", "rocm-smi"])
    # amd-smi reports x8 of a max x16 on this x8 card: shown, not judged (only the sysfs path is).
    assert gpu["link"] == {"speed_gts": 16.0, "width": 8, "max_speed_gts": 16.0, "max_width": 16, "degraded": None,
                           "degraded_links": [], "at": None, "source": "amd-smi"}


def test_tools_that_disagree_are_a_problem(tmp_path):
    # mi300x-vf profile: rocminfo sees one VF, the rocm-smi capture (another host) four.
    host = report.report_host(gathered(
        tmp_path, rocminfo=src(rocminfo_facts.main, "rocminfo/gfx942-mi300x-vf-rocm6.4.0.txt"),
        rocm_smi=src(rocm_smi_facts.main, "rocm-smi/showallinfo-a-4x-mi300x-vf-sriov-driver6.7.0.txt")), "vm1")
    assert host["gpu_count"] == 1 and host["driver_version"] == "6.7.0"
    assert host["problems"] == ["rocm-smi lists 4 GPU(s) that rocminfo does not: 0000:26:00.0, 0000:46:00.0, "
                                "0000:65:00.0, 0000:85:00.0"]


def test_rows_without_addresses_match_in_order(tmp_path):
    # rx7600 profile: rocm-smi's concise table prints no bus address.
    host = report.report_host(gathered(
        tmp_path, rocminfo=src(rocminfo_facts.main, "rocminfo/gfx1102-rx7600-rocm7-rock6.16.13-sudo.txt"),
        rocm_smi=src(rocm_smi_facts.main, "rocm-smi/default-rocm7-rx7600.txt")), "ws3")
    assert host["problems"] == [] and host["gpus"][0]["seen_by"] == ["rocm-smi", "rocminfo"]


def test_gpus_on_the_bus_without_a_driver(tmp_path):
    # no-gpu profile plus the sysfs tree of four downtrained MI50s with no driver bound.
    fixture_sysfs.build(str(tmp_path / "sys"))
    pci, _runner = run_module(gpu_pci_facts.main, {"sysfs_root": str(tmp_path / "sys")})
    no_kfd = capture("rocminfo/fail-rock-not-loaded-azure-mi25.txt")
    rocminfo, _runner = run_module(rocminfo_facts.main, {}, [(1, no_kfd, "")])
    host = report.report_host(gathered(tmp_path, rocminfo=rocminfo, gpu_pci=pci), "old1", 4)
    # Rows for the four cards, but no GPU ROCm can use: no count, no gfx target (as rocm_verify reports them).
    assert (host["gpu_count"], host["gfx_targets"], host["degraded_links"]) == (0, [], 4)
    assert [gpu["pci_bus"] for gpu in host["gpus"]] == ["0000:31:00.0", "0000:34:00.0", "0000:4b:00.0", "0000:4e:00.0"]
    gpu = host["gpus"][0]
    assert (gpu["model"], gpu["gfx_target"], gpu["seen_by"], gpu["driver"]) == (
        "AMD Instinct MI50 / MI60 / Radeon Pro VII", "gfx906", ["pci"], None)
    assert gpu["link"] == {"speed_gts": 2.5, "width": 8, "max_speed_gts": 16.0, "max_width": 16, "degraded": True,
                           "degraded_links": ["0000:31:00.0"], "at": "0000:31:00.0", "source": "sysfs"}
    assert gpu["problems"] == ["PCIe link degraded: 2.5 GT/s x8, capable of 16 GT/s x16 (at 0000:31:00.0)",
                               "no kernel driver bound (amdgpu not loaded, or it failed on this GPU: see dmesg)"]
    assert host["host_problems"][0].startswith('rocminfo: the amdgpu kernel driver (KFD, "ROCk module") is not loaded')
    assert host["host_problems"][1] == "0 AMD GPU(s) found, the inventory expects 4 (rocm_expected_gpu_count)"
    assert len(host["problems"]) == 2 + 4 * 2 and host["problems"][2].startswith("0000:31:00.0: PCIe link degraded")


def test_one_root_cause_is_listed_once(tmp_path):
    # Debian's real tools on a host without a GPU: rocminfo rc 1, rocm-smi "Driver not initialized" with rc 0.
    rocminfo, _runner = run_module(rocminfo_facts.main, {}, [(1, capture("rocminfo/fail-rock-not-loaded-azure-mi25.txt"), "")])
    rocm_smi, _runner = run_module(rocm_smi_facts.main, {}, [
        (0, "", capture("rocm-smi/fail-driver-not-initialized-azure-mi25.txt"))] * 2)
    host = report.report_host(gathered(tmp_path, rocminfo=rocminfo, rocm_smi=rocm_smi), "cpu1")
    assert host["gpu_count"] == 0 and len(host["problems"]) == 1 and host["problems"][0].startswith("rocminfo:")


def test_no_rocm_installed(tmp_path):
    host = report.report_host(gathered(tmp_path, rocm_version_file=NOT_FOUND), "bare1")
    assert host["rocm_version"] is None and host["gpus"] == []
    assert host["problems"] == [missing(rocminfo_facts.main)["ansible_facts"]["rocminfo"]["error"]]
    assert "rocminfo was not found" in host["problems"][0]


def test_fleet_lists_unreachable_hosts_and_counts(tmp_path):
    mi250x = report.report_host(gathered(tmp_path, rocminfo=src(
        rocminfo_facts.main, "rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt")), "b-node")
    # a-node has variables but never built its record; c-node is not in the play.
    host_vars = {"b-node": {"__rocm_report_host": mi250x}, "a-node": {"rocm_version": "6.2.4"},
                 "c-node": {"__rocm_report_host": mi250x}}
    fleet = report.report_fleet(host_vars, ["b-node", "a-node", "b-node"])
    assert [host["name"] for host in fleet["hosts"]] == ["a-node", "b-node"]
    assert fleet["hosts"][0]["reachable"] is False and fleet["hosts"][0]["problems"] == [report.UNREACHABLE]
    assert fleet["summary"] == {"hosts": 2, "unreachable": 1, "hosts_with_problems": 1, "gpus": 1, "amd_gpus": 1,
                                "degraded_links": 0, "models": {"AMD Instinct MI250X": 1}}
    assert report.report_stats(fleet) == {
        "a-node": {"gpu_count": 0, "gfx_targets": [], "rocm_version": None, "problems": [report.UNREACHABLE]},
        "b-node": {"gpu_count": 1, "gfx_targets": ["gfx90a"], "rocm_version": "6.2.4", "problems": []}}


def test_bad_input_is_a_clear_error():
    with pytest.raises(AnsibleFilterError, match="expects the dict that roles/rocm_report/tasks/gather.yml builds"):
        report.report_host(["not", "a", "dict"])
    with pytest.raises(AnsibleFilterError, match="expects hostvars"):
        report.report_fleet([], [])


def test_real_h200_pci_facts(tmp_path):
    # gpu_pci_facts on the lent H200 machine (docs/h200-pci/gpu_pci_h200.json, real sysfs): an NVIDIA GPU gets a
    # row of its own, its link judged from sysfs; no ROCm there, which is the host's one problem.
    real = json.loads((ROOT / "docs" / "h200-pci" / "gpu_pci_h200.json").read_text())["gpu_pci"]
    host = report.report_host(gathered(tmp_path, gpu_pci={"ansible_facts": {"gpu_pci": real}},
                                       rocm_version_file=NOT_FOUND), "h200")
    assert (host["gpu_count"], host["in_container"], len(host["gpus"])) == (0, True, 1)
    gpu = host["gpus"][0]
    assert (gpu["vendor"], gpu["model"], gpu["driver"], gpu["seen_by"]) == ("NVIDIA", "NVIDIA H200", "nvidia", ["pci"])
    assert (gpu["link"]["speed_gts"], gpu["link"]["width"], gpu["link"]["degraded"], gpu["link"]["source"]) == (
        32.0, 16, False, "sysfs")
    assert len(host["problems"]) == 1 and "rocminfo was not found" in host["problems"][0]
