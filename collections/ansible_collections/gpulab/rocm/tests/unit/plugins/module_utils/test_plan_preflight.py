"""The preflight verdict over real probes (fixtures/probe/SOURCES.md): every problem listed, warnings by policy,
the driver decision, python3-apt, the disk."""

import copy

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_preflight as preflight, stack
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import probe


NAVI22 = {"bdf": "0000:07:00.0", "name": "AMD Radeon RX 6700 XT", "device_id": "0x73df", "gfx_target": "gfx1031",
          "link": {"current_speed_gts": 16.0, "current_width": 16, "max_speed_gts": 16.0, "max_width": 16,
                   "degraded": False}}


MI250X_X8 = {"bdf": "0000:d1:00.0", "name": "AMD Instinct MI250X / MI250", "device_id": "0x740c", "gfx_target": "gfx90a",
             "link": {"current_speed_gts": 16.0, "current_width": 8, "max_speed_gts": 16.0, "max_width": 16,
                      "degraded": True}}


VEGA10 = {"bdf": "0000:03:00.0", "name": "AMD Radeon RX Vega 56/64", "device_id": "0x687f", "gfx_target": "gfx900",
          "link": {}}


WANTED = {"gpus_required": True, "unsupported_gpu": "fail", "degraded_link": "warn", "min_free_gb": 20}


def converged(**gpu_pci):
    """The converged Debian 12 container's probe, with the PCI bus of a GPU node instead of the container's."""
    node = probe("bookworm-converged-rocm6.2.4-fixture-tools-mi250x.json")
    node["gpu_pci"] = dict({"amd": [NAVI22], "in_container": False, "nvidia_present": False}, **gpu_pci)
    return node


def verdict(node, stack_values=None, **wanted):
    return preflight.plan(node, dict(WANTED, **wanted), stack.resolve(dict({"rocm_gpu_users": ["alice", "bob"]},
                                                                           **(stack_values or {}))))


def test_a_good_host_has_no_problem_and_wants_the_driver():
    result = verdict(converged())
    assert result["problems"] == []
    assert result["driver_wanted"] is True
    # The override is worth a notice (it is not official support), not a problem.
    assert result["gpus"][0]["status"] == "override"
    assert "HSA_OVERRIDE_GFX_VERSION=10.3.0" in result["notices"][0]


def test_every_problem_in_one_verdict():
    node = converged(amd=[VEGA10, MI250X_X8])
    node["os"]["version"] = "13"
    node["disk"]["free_bytes"] = 2 ** 30
    result = verdict(node, {"rocm_version": "5.7.1", "rocm_gpu_users": ["alice", "carol"]}, degraded_link="fail")
    text = "\n".join(result["problems"])
    assert "ROCm 5.7.1 publishes no noble suite" in text
    assert "0000:d1:00.0" in text and "16.0 GT/s x8 (max 16.0 GT/s x16)" in text
    assert "1.0 GiB free" in text
    assert "users that do not exist: carol" in text
    assert len(result["problems"]) == 4


def test_unsupported_gpu_by_policy():
    fail = verdict(converged(amd=[VEGA10]))
    # The stack's default release (10.x): the problem names the last release that supports the GPU.
    assert "Vega 10 is unsupported from ROCm 6.0; the last ROCm release that supports it is 5.7.x" in fail["problems"][0]
    warn = verdict(converged(amd=[VEGA10]), unsupported_gpu="warn")
    assert warn["problems"] == [] and "not supported by ROCm 10.1.0" in warn["notices"][0]


@pytest.mark.parametrize("policy, problems, notices", [("fail", 1, 0), ("warn", 0, 1), ("ignore", 0, 0)])
def test_degraded_link_policy(policy, problems, notices):
    result = verdict(converged(amd=[MI250X_X8]), degraded_link=policy)
    assert (len(result["problems"]), len(result["notices"])) == (problems, notices)


def test_no_gpu_is_a_problem_only_when_required():
    assert "no AMD GPU" in verdict(converged(amd=[]))["problems"][0]
    assert verdict(converged(amd=[]), gpus_required=False)["problems"] == []


def test_distro_source_skips_the_suite_check():
    node = converged()
    node["os"].update(distribution="Ubuntu", version="26.04")
    legacy = {"rocm_version": "7.2.4"}
    assert any("publishes no resolute suite" in p for p in verdict(node, legacy)["problems"])
    assert verdict(node, dict(legacy, rocm_install_source="distro"))["problems"] == []
    # The stack-wide suite override is what rocm_repo writes, so preflight checks the same.
    assert verdict(node, dict(legacy, rocm_apt_suite="noble"))["problems"] == []


def test_a_core_release_needs_the_os_s_own_folder_and_the_driver_s_suite():
    node = converged()
    node["os"].update(distribution="Ubuntu", version="20.04")
    problems = verdict(node)["problems"]
    assert any("Ubuntu 20.04 has no ROCm Core SDK repository" in p for p in problems)
    assert any("publishes no focal suite" in p for p in problems)  # the 31.50 driver has jammy, noble, resolute
    node["os"].update(distribution="Debian", version="13.1")
    assert verdict(node)["problems"] == []


def test_a_gpu_whose_target_the_core_release_does_not_ship_is_a_problem_before_any_change():
    # An MI300X (gfx942) runs on every Core release; the RX 6600 (gfx1032) runs gfx1030 code through its HSA
    # override, which 10.1 ships. A gfx target outside the table is refused, or warned under the policy.
    assert verdict(converged(amd=[dict(MI250X_X8, gfx_target="gfx942")]))["problems"] == []
    odd = dict(MI250X_X8, gfx_target="gfx1036")
    found = verdict(converged(amd=[odd]), {"rocm_version": "10.1.0"})
    text = " ".join(found["problems"] + found["notices"])
    assert "gfx1036" in text


def test_the_driver_is_decided_in_one_place():
    assert verdict(converged(in_container=True))["driver_wanted"] is False
    assert verdict(converged(in_container=True), {"rocm_kernel_driver": "always"})["driver_wanted"] is True
    assert verdict(converged(), {"rocm_kernel_driver": "never"})["driver_wanted"] is False


def test_secure_boot_with_dkms_warns():
    node = converged()
    node["firmware"]["secure_boot"] = True
    assert any("Secure Boot" in n for n in verdict(node)["notices"])
    assert not any("Secure Boot" in n for n in verdict(node, {"rocm_kernel_driver": "never"})["notices"])


def test_missing_headers_warn():
    node = converged()
    node["apt"]["headers_package"] = "linux-headers-6.1.0-28-amd64"
    node["apt"]["policy"]["linux-headers-6.1.0-28-amd64"] = {"installed": None, "candidate": None}
    assert any("linux-headers-6.1.0-28-amd64 is not in the apt sources" in n for n in verdict(node)["notices"])


def test_disk_that_cannot_be_read_is_a_problem():
    # Issue 10, bug 4: when df failed, the old check passed silently.
    node = converged()
    node["disk"] = {"path": "/opt", "checked": "/opt", "free_bytes": None,
                    "error": "cannot read the free space of /opt: [Errno 5] Input/output error"}
    problems = verdict(node)["problems"]
    assert len(problems) == 1 and "free space on the filesystem of /opt is unknown" in problems[0]


def test_a_fresh_host_with_a_reachable_archive_warns_that_every_list_is_refreshed():
    node = probe("trixie-fresh-no-apt-lists.json")
    result = verdict(node, gpus_required=False)
    assert result["problems"] == []
    assert any("apt has no package lists yet" in n for n in result["notices"])


def test_an_unreachable_archive_warns_when_the_plan_needs_nothing_from_it():
    # The lent Ubuntu 24.04 machine's real probe: no apt lists, no python3-apt, no route out. In a container no
    # driver (and no kernel headers) is wanted, and AMD's sources bring every ROCm package: the run goes on.
    node = probe("ubuntu24.04-h200-no-apt-lists-no-route.json")
    result = verdict(node, {"rocm_gpu_users": []}, gpus_required=False, min_free_gb=1)
    assert result["problems"] == [], result["problems"]
    notice = [n for n in result["notices"] if "archive cannot be reached" in n]
    assert len(notice) == 1 and "UBUNTU-SECURITY" in notice[0] and "only the ROCm sources" in notice[0]
    assert not any("python3-apt" in text for text in result["notices"] + result["problems"])


def test_an_unreachable_archive_stops_when_the_plan_needs_packages_from_it():
    node = probe("ubuntu24.04-h200-no-apt-lists-no-route.json")
    result = verdict(node, {"rocm_gpu_users": [], "rocm_install_source": "distro"}, gpus_required=False,
                     min_free_gb=1)
    assert len(result["problems"]) == 1
    assert "the plan needs from it: the distribution's ROCm packages" in result["problems"][0]
    apt = {"lists_empty": True, "archive": {"reachable": False, "error": "E: x"}, "headers_package": "linux-headers-6.8",
           "policy": {"linux-headers-6.8": {"installed": None, "candidate": None}}}
    needs = preflight.distribution_needs(apt, {"install_source": "amd"}, True)
    assert needs == ["linux-headers-6.8"]
    problems, warnings = preflight.distribution_lists(apt, needs)
    assert warnings == [] and "needs from it: linux-headers-6.8" in problems[0]
    assert preflight.distribution_lists(dict(apt, lists_empty=False), needs) == ([], [])
    # Installed headers are not needed from the archive.
    apt["policy"]["linux-headers-6.8"]["installed"] = "6.8.0-1"
    assert preflight.distribution_needs(apt, {"install_source": "amd"}, True) == []


def test_unknown_users_are_problems():
    node = copy.deepcopy(converged())
    node["users"]["bob"] = {"exists": False}
    assert verdict(node)["problems"] == ["users that do not exist: bob (rocm_gpu_users); create them first"]
