"""The files each fixture host got, and what its users' login shells see."""

import os
import re


def profile_vars(host):
    text = host.file("/etc/profile.d/rocm.sh").content_string
    return dict(re.findall(r"^export (\w+)=(.*)$", text, re.M)), text


def login_env(host, var):
    return host.check_output(f"su - alice -c 'printf %s \"${{{var}-unset}}\"'")


def check_navi22_workstation_with_nvidia(host):
    exported, text = profile_vars(host)
    assert exported["HSA_OVERRIDE_GFX_VERSION"] == "10.3.0"
    assert exported["PYTORCH_ROCM_ARCH"] == "gfx1030"
    # rocm_only: CUDA frameworks see no NVIDIA GPU; HIP ignores the empty value.
    assert exported["CUDA_VISIBLE_DEVICES"] == "''"
    assert "coexistence policy: rocm_only" in text
    assert login_env(host, "CUDA_VISIBLE_DEVICES") == ""
    assert login_env(host, "HSA_OVERRIDE_GFX_VERSION") == "10.3.0"
    assert "export CUDA_VISIBLE_DEVICES=''" in host.file("/home/alice/.bashrc").content_string
    # The GPU runs gfx1030 code, so it gets gfx1030's MIOpen kernels.
    assert host.package("miopen-hip-gfx1030kdb").is_installed
    # A container gets no driver.
    assert not host.file("/etc/apt/sources.list.d/amdgpu.list").exists
    assert not host.package("amdgpu-dkms").is_installed


def check_mi250x_node(host):
    exported, text = profile_vars(host)
    assert exported["PYTORCH_ROCM_ARCH"] == "gfx90a"
    assert not any(key.startswith("HSA_OVERRIDE") for key in exported)
    assert "CUDA_VISIBLE_DEVICES" not in exported and "coexistence" not in text
    # The Core SDK's runtime of exactly this node's target (its PCI bus shows MI250X GCDs), not every target's.
    assert host.package("amdrocm10.1-gfx90a").is_installed and host.package("amdrocm-dnn10.1-gfx90a").is_installed
    assert not host.package("amdrocm10.1").is_installed and not host.package("amdrocm10.1-gfx942").is_installed
    # Driver wanted (image build for bare metal): the Core release's 31.50 driver, in the legacy layout signed by the
    # legacy key, beside the Core source signed by the Core key; a reboot marked, not done.
    url = os.environ["GPULAB_MIRROR_URL"]
    options = "deb [arch=amd64 signed-by=/etc/apt/keyrings/rocm.gpg]"
    driver = [ln for ln in host.file("/etc/apt/sources.list.d/amdgpu.list").content_string.splitlines()
              if ln.startswith("deb ")]
    assert driver == [f"{options} {url}/amdgpu/31.50/ubuntu jammy main"]
    assert "Signed-By: /etc/apt/keyrings/amdrocm.gpg" in host.file(
        "/etc/apt/sources.list.d/amdrocm-stable.sources").content_string
    assert not host.file("/etc/apt/sources.list.d/rocm.list").exists
    dkms = host.package("amdgpu-dkms")
    assert dkms.is_installed and ".31500000-" in dkms.version
    assert host.file("/run/reboot-required").exists


def check_build_node(host):
    exported, text = profile_vars(host)
    assert set(exported) == {"ROCM_PATH", "HIP_PLATFORM"}
    assert "coexistence" not in text
    assert host.package("rocblas-dev").is_installed and host.package("miopen-hip-dev").is_installed
    assert "kdb" not in host.check_output("dpkg-query -W -f '${Package}\\n' | grep kdb || true")


def check_mixed_radeons_get_the_per_node_override(host):
    exported, _ = profile_vars(host)
    # Node 1 is the RX 6900 XT (native gfx1030), node 2 the RX 6600 (gfx1032 -> 10.3.0).
    assert exported["HSA_OVERRIDE_GFX_VERSION_2"] == "10.3.0"
    assert "HSA_OVERRIDE_GFX_VERSION" not in exported and "HSA_OVERRIDE_GFX_VERSION_1" not in exported
    assert exported["PYTORCH_ROCM_ARCH"] == "gfx1030"


CHECKS = {
    "molecule-hw-navi22": check_navi22_workstation_with_nvidia,
    "molecule-hw-mi250x": check_mi250x_node,
    "molecule-hw-build": check_build_node,
    "molecule-hw-mixed": check_mixed_radeons_get_the_per_node_override,
}


def test_host_matches_its_hardware(host):
    CHECKS[host.backend.get_hostname()](host)
