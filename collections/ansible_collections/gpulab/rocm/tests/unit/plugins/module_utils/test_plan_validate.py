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
        "venv": d["rocm_validate_venv"], "rocm_version": d["rocm_validate_rocm_version"],
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
