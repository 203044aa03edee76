"""rocm_validate's plan (module_utils/planning/plan_validate.py) over the role's own defaults: which benchmarks with which
arguments, which Python, which wheel index for the release, and every inconsistent setting named at once."""

from pathlib import Path

import pytest
import yaml

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_validate, stack
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError

ROOT = Path(__file__).resolve().parents[8]
DEFAULTS = yaml.safe_load((ROOT / "roles" / "rocm_validate" / "defaults" / "main.yml").read_text())


def wanted(**over):
    """The role's wanted state (vars/main.yml) with its defaults."""
    d = dict(DEFAULTS, **over)
    keys = [key for key, _option in plan_validate._OPTIONS]
    return {
        "enabled": dict((name, d["rocm_validate_%s_enabled" % name]) for name in plan_validate.BENCHMARKS),
        "settings": dict((key, d["rocm_validate_%s" % key]) for key in keys),
        "power_enabled": d["rocm_validate_power_enabled"], "power_interval_s": d["rocm_validate_power_interval_s"],
        "tiny": d["rocm_validate_tiny"], "extra_args": d["rocm_validate_extra_args"],
        "python": d["rocm_validate_python"], "install_pytorch": d["rocm_validate_install_pytorch"],
        "venv": d["rocm_validate_venv"], "pytorch_packages": d["rocm_validate_pytorch_packages"],
        "rocm_version": d["rocm_validate_rocm_version"],
        "thresholds": d["rocm_validate_thresholds"], "report_src": d["rocm_validate_report_src"],
        "report_src_is_file": False, "fetch_dest": "/srv/reports",
    }


@pytest.mark.parametrize("version, tag", [("6.2.4", "rocm6.2.4"), ("6.2", "rocm6.2"), ("6.3.1", "rocm6.3"),
                                          ("7.1", "rocm7.1")])
def test_the_wheel_index_follows_the_stack_wide_release(version, tag):
    plan = plan_validate.plan({}, wanted(), stack.resolve({"rocm_version": version}))
    # The stack-wide input as resolved (6.2 is 6.2.0).
    assert plan["wheel_tag"] == tag and plan["rocm_version"] == stack.resolve({"rocm_version": version})["version"]
    # The role's own release, when set, wins.
    assert plan_validate.plan({}, wanted(rocm_validate_rocm_version="6.2"),
                              stack.resolve({"rocm_version": version}))["wheel_tag"] == "rocm6.2"


def test_the_arguments_and_the_python_by_default():
    plan = plan_validate.plan({}, wanted(), stack.resolve({}))
    assert plan["benchmarks"] == ["gemm", "bandwidth", "resnet50", "bert"]
    assert plan["args"][:6] == ["--device", "auto", "--device-index", "0", "--benchmarks", "gemm,bandwidth,resnet50,bert"]
    assert plan["args"][plan["args"].index("--gemm-dtypes") + 1] == "fp32,tf32,fp16,bf16"
    assert plan["args"][-4:] == ["--power", "auto", "--power-interval", "0.5"]
    assert plan["interpreter"] == "/usr/bin/python3"
    venv = plan_validate.plan({}, wanted(rocm_validate_install_pytorch=True, rocm_validate_tiny=True),
                              stack.resolve({}))
    assert venv["interpreter"] == "/opt/gpulab/torch-venv/bin/python" and venv["args"][-1] == "--tiny"


def test_every_inconsistent_setting_is_named_at_once():
    bad = wanted(rocm_validate_gemm_enabled=False, rocm_validate_bandwidth_enabled=False,
                 rocm_validate_resnet50_enabled=False, rocm_validate_bert_enabled=False,
                 rocm_validate_thresholds={"NVIDIA H200": [600]}, rocm_validate_install_pytorch=True,
                 rocm_validate_rocm_version="latest")
    with pytest.raises(PlanError) as raised:
        plan_validate.plan({}, bad, stack.resolve({}))
    message = str(raised.value)
    for words in ("enable at least one benchmark", "must map GPU model names",
                  "rocm_validate_rocm_version must look like X.Y.Z or X.Y, got 'latest'"):
        assert words in message


# An RX 7600 (native in the Core SDK) and an RX 6700 XT (runs as gfx1030 through the HSA override), as gpu_pci_facts
# gives them.
RADEON = {"gpu_pci": {"amd": [{"bdf": "0000:03:00.0", "gfx_target": "gfx1102"},
                              {"bdf": "0000:83:00.0", "gfx_target": "gfx1031"}]}}


@pytest.mark.parametrize("version, tag, index", [
    ("6.2.4", "rocm6.2.4", "https://download.pytorch.org/whl/rocm6.2.4"),
    ("7.2.4", "rocm7.2", "https://download.pytorch.org/whl/rocm7.2"),
    ("7.14.1", None, "https://repo.amd.com/rocm/whl-multi-arch/"),
    ("10.0.0", None, "https://stable.repo.amd.com/rocm/whl-next/"),
    ("10.1.0", None, "https://stable.repo.amd.com/rocm/whl-next/"),
])
def test_the_index_is_pytorchs_for_legacy_and_amds_for_the_core_sdk(version, tag, index):
    plan = plan_validate.plan({}, wanted(), stack.resolve({"rocm_version": version}))
    assert (plan["wheel_tag"], plan["index_url"]) == (tag, index)


def test_a_core_release_installs_torch_with_the_hosts_device_extras_and_its_own_rocm():
    # AMD's index holds every Core release and splits the GPU code into device extras (TheRock RELEASES.md).
    plan = plan_validate.plan(RADEON, wanted(rocm_validate_install_pytorch=True,
                                             rocm_validate_pytorch_packages=["torch", "torchvision==0.29.0",
                                                                             "torchaudio"]),
                              stack.resolve({"rocm_version": "10.1.0"}))
    assert plan["pytorch_packages"] == ["torch[device-gfx1030,device-gfx1102]",
                                        "torchvision[device-gfx1030,device-gfx1102]==0.29.0", "torchaudio",
                                        "rocm==10.1.0"]
    # No AMD GPU on the bus: every target's code; the admin's own requirements are left as written.
    assert plan_validate.plan({}, wanted(), stack.resolve({"rocm_version": "10.0"}))["pytorch_packages"] == [
        "torch[device-all]", "rocm==10.0.0"]
    own = ["torch[device-gfx942]==2.14.0", "rocm[devel]==10.1.0"]
    assert plan_validate.plan(RADEON, wanted(rocm_validate_pytorch_packages=own),
                              stack.resolve({}))["pytorch_packages"] == own
    # A legacy release's index holds one build per package: as given.
    assert plan_validate.plan(RADEON, wanted(), stack.resolve({"rocm_version": "7.2.4"}))["pytorch_packages"] == [
        "torch"]


def test_wheels_for_a_release_the_table_refuses_are_refused_before_the_install():
    with pytest.raises(PlanError, match="rocm_validate_rocm_version: ROCm 7.10 is a technology preview"):
        plan_validate.plan({}, wanted(rocm_validate_install_pytorch=True, rocm_validate_rocm_version="7.10"),
                           stack.resolve({}))
    # Without the install, no index and no wheels, and no refusal.
    plan = plan_validate.plan({}, wanted(rocm_validate_rocm_version="7.10"), stack.resolve({}))
    assert plan["index_url"] is None and plan["pytorch_packages"] == []
