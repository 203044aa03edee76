"""Decisions from a host's GPUs: support per release, HSA overrides, kdb names, CUDA coexistence."""

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_support as gs, rocm_release


@pytest.mark.parametrize("gfx, rocm, status, override", [
    ("gfx90a", "6.2.4", "native", None),
    ("gfx90a:sramecc+:xnack-", "6.2.4", "native", None),
    ("gfx942", "6.2.4", "native", None),
    ("gfx942", "5.7.1", "unsupported", None),       # MI300 from 6.0
    ("gfx1030", "6.2.4", "native", None),
    ("gfx1031", "6.2.4", "override", "10.3.0"),     # Navi 22
    ("gfx1032", "6.2.4", "override", "10.3.0"),     # Navi 23
    ("gfx1034", "6.2.4", "override", "10.3.0"),     # Navi 24
    ("gfx1100", "6.2.4", "native", None),
    ("gfx1101", "6.2.4", "override", "11.0.0"),     # Navi 32
    ("gfx1102", "6.2.4", "override", "11.0.0"),     # Navi 33
    ("gfx1103", "6.2.4", "override", "11.0.0"),     # Phoenix
    ("gfx900", "5.7.1", "native", None),
    ("gfx900", "6.2.4", "unsupported", None),       # Vega 10 dropped in 6.x
    ("gfx803", "6.2.4", "unsupported", None),
    ("gfx1201", "6.2.4", "unsupported", None),      # RDNA4 from 6.4.1
    (None, "6.2.4", "unsupported", None),
])
def test_support(gfx, rocm, status, override):
    result = gs.support(gfx, rocm)
    assert (result["status"], result["override"]) == (status, override)


def test_one_override_for_a_host_of_one_kind():
    env, warnings = gs.hsa_override_env([{"gfx_target": "gfx1031"}, {"gfx_target": "gfx1031"}], "6.2.4")
    assert env == {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"} and warnings == []


def test_no_override_where_every_gpu_is_native():
    assert gs.hsa_override_env([{"gfx_target": "gfx90a"}] * 4, "6.2.4") == ({}, [])


def test_per_node_form_when_gpus_differ():
    gpus = [{"gfx_target": "gfx1030", "kfd_node": 1}, {"gfx_target": "gfx1032", "kfd_node": 2}]
    assert gs.hsa_override_env(gpus, "6.2.4") == ({"HSA_OVERRIDE_GFX_VERSION_2": "10.3.0"}, [])


def test_mixed_gpus_before_6_2_get_no_global_override_and_a_warning():
    env, warnings = gs.hsa_override_env(["gfx1030", "gfx1032"], "6.1.3")
    assert env == {} and "6.2" in warnings[0]


def test_mixed_gpus_without_kfd_nodes_wait_for_the_driver():
    env, warnings = gs.hsa_override_env(["gfx1100", "gfx1102"], "6.2.4")
    assert env == {} and "KFD" in warnings[0]


def test_effective_targets_apply_the_override():
    assert gs.effective_targets(["gfx1031", "gfx90a", "gfx1102"], "6.2.4") == ["gfx1030", "gfx1100", "gfx90a"]


@pytest.mark.parametrize("rocm, names", [
    ("5.4.3", ["miopenkernels-gfx906-60kdb", "miopenkernels-gfx906-64kdb",
               "miopenkernels-gfx90a-104kdb", "miopenkernels-gfx90a-110kdb"]),
    ("5.6.1", ["miopen-hip-gfx906-60kdb", "miopen-hip-gfx906-64kdb", "miopen-hip-gfx90a-104kdb",
               "miopen-hip-gfx90a-110kdb"]),
    ("5.7.1", ["miopen-hip-gfx906kdb", "miopen-hip-gfx90akdb"]),
    ("6.2.4", ["miopen-hip-gfx906kdb", "miopen-hip-gfx90akdb"]),
])
def test_kdb_names_per_series(rocm, names):
    assert gs.kdb_packages(["gfx90a:xnack-", "gfx906", "gfx90a"], rocm) == names


@pytest.mark.parametrize("policy, nvidia, env", [
    ("rocm_only", True, {"CUDA_VISIBLE_DEVICES": "", "HIP_PLATFORM": "amd"}),
    ("both", True, {"HIP_PLATFORM": "amd"}),
    ("none", True, {}),
    ("rocm_only", False, {}),
    ("both", False, {}),
])
def test_cuda_coexistence(policy, nvidia, env):
    assert gs.cuda_coexistence_env(policy, nvidia) == env


def test_unknown_policy_is_refused():
    with pytest.raises(ValueError, match="rocm_only, both, none"):
        gs.cuda_coexistence_env("cuda_first", True)


def test_amd_gpus_join_kfd_nodes_by_address():
    facts = {
        "amd": [{"bdf": "0000:03:00.0", "name": "AMD Instinct MI210", "device_id": "0x740f", "gfx_target": "gfx90a"},
                {"bdf": "0000:83:00.0", "name": None, "device_id": "0x73df", "gfx_target": "gfx1031"}],
        "kfd_nodes": [{"node": 0, "type": "cpu"}, {"node": 1, "type": "gpu", "bdf": "0000:03:00.0", "gfx_target": "gfx90a"}],
    }
    gpus = gs.amd_gpus(facts)
    assert [(g["bdf"], g["kfd_node"], g["gfx_target"]) for g in gpus] == [
        ("0000:03:00.0", 1, "gfx90a"), ("0000:83:00.0", None, "gfx1031")]


def test_a_gpu_past_its_last_release_names_that_release():
    verdict = gs.support("gfx900", "7.2.3")
    assert verdict["status"] == "unsupported" and "the last ROCm release that supports it is 5.7.x" in verdict["note"]


def test_gfx950_from_7_0():
    assert gs.support("gfx950", "7.0.0")["status"] == "native"
    assert gs.support("gfx950", "6.2.4")["note"].startswith("supported from ROCm 7.0.0")
    assert gs.kdb_packages(["gfx950"], "7.2.3") == ["miopen-hip-gfx950kdb"]


@pytest.mark.parametrize("rocm, status, override", [
    ("7.2.4", "override", "11.0.0"),    # the last legacy release: RX 7600 runs as gfx1100
    ("7.14.0", "native", None),         # the first Core SDK release ships amdrocm7.14-gfx1102
    ("10.1.0", "native", None),
])
def test_an_rx_7600_is_native_from_the_core_sdk(rocm, status, override):
    assert (gs.support("gfx1102", rocm)["status"], gs.support("gfx1102", rocm)["override"]) == (status, override)
    env, _warnings = gs.hsa_override_env([{"gfx_target": "gfx1102"}], rocm)
    assert env == ({"HSA_OVERRIDE_GFX_VERSION": override} if override else {})


@pytest.mark.parametrize("rocm", ["7.14.0", "10.0.0", "10.1.0"])
def test_a_core_release_runs_natively_exactly_the_targets_it_ships(rocm):
    native = sorted(target for target in gs.NATIVE if gs.support(target, rocm)["status"] == "native")
    assert native == sorted(rocm_release.CORE_TARGETS)
    assert gs.support("gfx906", rocm)["note"].endswith("the last ROCm release that supports it is 7.2.x")


def test_a_core_release_has_no_kdb_packages():
    # MIOpen's kernel databases ship in amdrocm-dnn<X.Y>-<target>, pulled by amdrocm<X.Y>-<target>.
    assert gs.kdb_packages(["gfx942", "gfx90a"], "10.1.0") == []
    assert gs.kdb_packages(["gfx942"], "7.2.4") == ["miopen-hip-gfx942kdb"]
