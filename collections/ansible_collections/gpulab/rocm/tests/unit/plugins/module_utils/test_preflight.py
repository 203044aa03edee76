"""The preflight verdict: every problem listed, warnings by policy, the driver decision."""

import base64

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils import driver, preflight

DF = ("Filesystem      1-blocks        Used   Available Capacity Mounted on\n"
      "/dev/vda    270465425408 23622320128 85899345920      22% /\n")
NAVI22 = {"bdf": "0000:07:00.0", "name": "AMD Radeon RX 6700 XT", "device_id": "0x73df", "gfx_target": "gfx1031",
          "link": {"current_speed_gts": 16.0, "current_width": 16, "max_speed_gts": 16.0, "max_width": 16,
                   "degraded": False}}
MI250X_X8 = {"bdf": "0000:d1:00.0", "name": "AMD Instinct MI250X / MI250", "device_id": "0x740c", "gfx_target": "gfx90a",
             "link": {"current_speed_gts": 16.0, "current_width": 8, "max_speed_gts": 16.0, "max_width": 16,
                      "degraded": True}}
VEGA10 = {"bdf": "0000:03:00.0", "name": "AMD Radeon RX Vega 56/64", "device_id": "0x687f", "gfx_target": "gfx900",
          "link": {}}


def inputs(**over):
    base = {"rocm_version": "6.2.4", "install_source": "amd", "distribution": "Debian", "distribution_version": "12",
            "suite_override": "", "gpu_pci": {"amd": [NAVI22], "in_container": False, "nvidia_present": False},
            "gpus_required": True, "unsupported_gpu": "fail", "degraded_link": "warn", "df_output": DF,
            "min_free_bytes": 20 * 2 ** 30, "disk_path": "/opt", "secure_boot_efivar": None, "driver_enabled": True,
            "driver_in_container": False, "missing_users": [], "headers_package": "linux-headers-6.1.0-28-amd64",
            "headers_available": True}
    base.update(over)
    return base


def test_a_good_host_has_no_problem_and_wants_the_driver():
    verdict = preflight.evaluate(inputs())
    assert verdict["problems"] == []
    assert verdict["driver_wanted"] is True
    # The override is worth a warning (it is not official support), not a problem.
    assert verdict["gpus"][0]["status"] == "override"
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in verdict["warnings"][0]


def test_every_problem_in_one_verdict():
    verdict = preflight.evaluate(inputs(
        rocm_version="5.7.1", distribution_version="13", gpu_pci={"amd": [VEGA10, MI250X_X8]},
        degraded_link="fail", df_output=DF.replace("85899345920", "1073741824"), missing_users=["bob"]))
    text = "\n".join(verdict["problems"])
    assert "ROCm 5.7.1 publishes no noble suite" in text
    assert "0000:d1:00.0" in text and "16.0 GT/s x8 (max 16.0 GT/s x16)" in text
    assert "1.0 GiB free" in text
    assert "users that do not exist: bob" in text
    assert len(verdict["problems"]) == 4


def test_unsupported_gpu_by_policy():
    fail = preflight.evaluate(inputs(gpu_pci={"amd": [VEGA10]}))
    assert "Vega 10 is unsupported from ROCm 6.0" in fail["problems"][0]
    warn = preflight.evaluate(inputs(gpu_pci={"amd": [VEGA10]}, unsupported_gpu="warn"))
    assert warn["problems"] == [] and "not supported by ROCm 6.2.4" in warn["warnings"][0]


@pytest.mark.parametrize("policy, problems, warnings", [("fail", 1, 0), ("warn", 0, 1), ("ignore", 0, 0)])
def test_degraded_link_policy(policy, problems, warnings):
    verdict = preflight.evaluate(inputs(gpu_pci={"amd": [MI250X_X8]}, degraded_link=policy))
    assert (len(verdict["problems"]), len(verdict["warnings"])) == (problems, warnings)


def test_no_gpu_is_a_problem_only_when_required():
    assert "no AMD GPU" in preflight.evaluate(inputs(gpu_pci={"amd": []}))["problems"][0]
    assert preflight.evaluate(inputs(gpu_pci={"amd": []}, gpus_required=False))["problems"] == []


def test_bad_version_and_bad_policy_are_problems():
    verdict = preflight.evaluate(inputs(rocm_version="6.x", degraded_link="maybe"))
    assert any("6.2.4" in p for p in verdict["problems"]) and any("degraded_link" in p for p in verdict["problems"])


def test_distro_source_skips_the_suite_check():
    assert preflight.evaluate(inputs(install_source="distro", distribution="Fedora", distribution_version="40"))[
        "problems"] == []


def test_containers_want_no_driver_unless_asked():
    pci = {"amd": [NAVI22], "in_container": True}
    assert preflight.evaluate(inputs(gpu_pci=pci))["driver_wanted"] is False
    assert preflight.evaluate(inputs(gpu_pci=pci, driver_in_container=True))["driver_wanted"] is True


def test_secure_boot_with_dkms_warns():
    on = base64.b64encode(b"\x06\x00\x00\x00\x01").decode()
    off = base64.b64encode(b"\x06\x00\x00\x00\x00").decode()
    assert any("Secure Boot" in w for w in preflight.evaluate(inputs(secure_boot_efivar=on))["warnings"])
    assert not any("Secure Boot" in w for w in preflight.evaluate(inputs(secure_boot_efivar=off))["warnings"])
    assert not any("Secure Boot" in w for w in preflight.evaluate(inputs(secure_boot_efivar=on, driver_enabled=False))[
        "warnings"])


def test_missing_headers_warn():
    verdict = preflight.evaluate(inputs(headers_available=False))
    assert any("linux-headers-6.1.0-28-amd64 is not in the apt sources" in w for w in verdict["warnings"])


@pytest.mark.parametrize("df, free", [(DF, 85899345920), ("", None), ("garbage", None)])
def test_free_bytes(df, free):
    assert preflight.free_bytes(df) == free


@pytest.mark.parametrize("changed, allows, conn, host_id, ctl_id, container, reboot, pending", [
    (False, True, "ssh", "a", "b", False, False, False),   # nothing changed: nothing to do
    (True, True, "ssh", "a", "b", False, True, False),     # changed, allowed: reboot
    (True, False, "ssh", "a", "b", False, False, True),    # policy says no
    (True, True, "local", "a", "b", False, False, True),   # local connection
    (True, True, "ssh", "a\n", "a", False, False, True),   # the control node itself, reached over ssh
    (True, True, "ssh", "", "", True, False, True),        # a container
])
def test_reboot_plan(changed, allows, conn, host_id, ctl_id, container, reboot, pending):
    plan = driver.reboot_plan(changed, allows, conn, host_id, ctl_id, container)
    assert (plan["reboot"], plan["pending"]) == (reboot, pending)
