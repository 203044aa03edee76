"""The facts modules against Debian 13's real rocminfo, rocm-smi and amd-smi in a container with no GPU, and
gpu_pci_facts against the container's real sysfs (issue: GPU facts modules)."""

import pytest


def facts(host, module, **args):
    result = host.ansible(module, " ".join(f"{k}={v}" for k, v in args.items()), check=False)
    assert not result.get("failed"), result
    assert result["changed"] is False
    return result["ansible_facts"]


@pytest.fixture(scope="module", autouse=True)
def real_tools(host):
    for tool in ("rocminfo", "rocm-smi", "amd-smi"):
        assert host.exists(tool), f"{tool} from Debian's archive is not installed"
        assert host.check_output(f"dpkg -S $(command -v {tool})"), tool


def test_rocminfo_without_gpu(host):
    info = facts(host, "gpulab.rocm.rocminfo_facts")["rocminfo"]
    assert info["present"] is True
    assert info["gpu_count"] == 0 and info["gpus"] == []
    assert info["error_kind"] == "driver_not_loaded"
    assert "amdgpu" in info["error"] or "ROCk" in info["error"]


def test_rocminfo_fail_on_no_gpu(host):
    # testinfra's ad-hoc runner drops the `failed` key of a module's fail_json; the failure shows as its `msg`,
    # which a successful facts run does not have.
    assert "msg" not in host.ansible("gpulab.rocm.rocminfo_facts", "", check=False)
    result = host.ansible("gpulab.rocm.rocminfo_facts", "fail_on_no_gpu=true", check=False)
    assert "amdgpu kernel driver" in result["msg"] and "not loaded" in result["msg"]


def test_rocm_smi_without_gpu(host):
    smi = facts(host, "gpulab.rocm.rocm_smi_facts")["rocm_smi"]
    assert smi["present"] is True
    # rocm-smi exits 0 here: only the output tells that the driver is missing.
    assert smi["rc"] == 0
    assert smi["gpu_count"] == 0 and smi["error_kind"] == "driver_not_loaded"


def test_amd_smi_without_gpu(host):
    smi = facts(host, "gpulab.rocm.amd_smi_facts")["amd_smi"]
    assert smi["present"] is True
    assert smi["rc"] == 255
    assert smi["gpu_count"] == 0 and smi["error_kind"] == "driver_not_loaded"


def test_gpu_pci_on_the_real_sysfs(host):
    pci = facts(host, "gpulab.rocm.gpu_pci_facts")["gpu_pci"]
    assert pci["in_container"] is True and pci["container_type"] == "docker"
    # Whatever GPUs this machine has are listed with their real ids; the test machines have none.
    real = host.check_output("for d in /sys/bus/pci/devices/*; do cat $d/vendor $d/class; done | paste - - "
                             "| awk '($1 == \"0x1002\" || $1 == \"0x10de\") && $2 ~ /^0x(03|12)/' | wc -l")
    assert len(pci["devices"]) == int(real)
    assert pci["kfd_present"] is False and pci["kfd_nodes"] == []
