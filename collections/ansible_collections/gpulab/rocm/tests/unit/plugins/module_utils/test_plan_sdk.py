"""rocm_sdk's planner (plan_sdk.py) over real probes (fixtures/probe/SOURCES.md): the packages with the candidates
apt offers, holds, packages apt does not offer, the repair, orphans, and the values it refuses."""

import copy

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_sdk, rocm_packages
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import CONVERGED, SDK, held, inputs, probe


def test_the_package_plan_with_the_candidates_apt_offers():
    node = probe(CONVERGED)
    installed = node["packages"]
    candidates = dict((name, [version]) for name, (_abbrev, version) in installed.items() if ".60204-" in version)
    node["packages"] = dict((name, info) for name, info in installed.items() if ".60204-" not in info[1])
    node["candidates"] = candidates
    plan = plan_sdk.plan(node, SDK, inputs())
    install = plan["packages"]["install"]
    assert "rocm-hip-sdk=%s" % candidates["rocm-hip-sdk"][0] in install
    assert not [item for item in install if "kdb=" in item]  # the container shows no GPU on its PCI bus
    assert plan["packages"]["missing"] == []


@pytest.mark.parametrize("wanted, message", [
    ({"extra_packages": ["-o=APT::Get::Trivial-Only"]}, "not Debian package names"),
    ({"kdb_gfx_targets": ["gfx90a; rm"]}, "not gfx targets"),
])
def test_package_values_are_refused(wanted, message):
    with pytest.raises(PlanError, match=message):
        plan_sdk.plan(probe(CONVERGED), dict(SDK, **wanted), inputs())


def test_the_repair_removes_nothing_but_rocm():
    # Issue 15, item 10: apt-get install --fix-broken could remove packages that have nothing to do with ROCm.
    node = copy.deepcopy(probe(CONVERGED))
    node["fix_broken"] = {"removes": ["rocblas", "nginx"], "rc": 0, "error": None}
    with pytest.raises(PlanError, match="would also remove nginx, which are not ROCm packages"):
        plan_sdk.plan(node, SDK, inputs())
    node["fix_broken"]["removes"] = ["rocblas"]
    plan_sdk.plan(node, SDK, inputs())


def test_a_hold_a_release_change_would_move_is_refused_before_apt_is_asked():
    # The first plan of the phase (the plan pass, before rocm_repo writes the new sources) already sees it.
    node = held(copy.deepcopy(probe(CONVERGED)), "rocblas")
    with pytest.raises(PlanError, match=r"^rocm_sdk: rocblas is held \(apt-mark hold\).*own the holds of its "
                                        r"packages\.$"):
        plan_sdk.plan(node, SDK, inputs(rocm_version="6.2"))
    assert plan_sdk.plan(node, SDK, inputs())["changes"] == []  # held at the wanted release: nothing to move
    assert plan_sdk.plan(node, dict(SDK, hold=True), inputs(rocm_version="6.2"))["allow_held"] is True


def test_a_package_apt_does_not_offer_is_refused_once_apt_is_asked_and_says_no_package_changed_yet():
    node = probe(CONVERGED)
    node["candidates"] = dict((name, [version]) for name, (_abbrev, version) in node["packages"].items())
    wanted = dict(SDK, extra_packages=["hipfft"])
    with pytest.raises(PlanError) as raised:
        plan_sdk.plan(node, wanted, inputs())
    assert str(raised.value) == (
        "rocm_sdk: not in the configured apt repositories: hipfft (ROCm 6.2.4). Check the package names "
        "(rocm_sdk_packages, rocm_sdk_extra_packages) and that the repository holds this release. rocm_sdk had "
        "installed or removed no package yet.")
    with pytest.raises(PlanError, match=r"yet \(it had finished the interrupted dpkg run first\)\.$"):
        plan_sdk.plan(node, wanted, inputs(), previous={"repair": True})
    # In check mode the repository may not be configured yet: a notice of the role, not a refusal.
    assert plan_sdk.plan(node, wanted, inputs(), {"check_mode": True})["packages"]["missing"] == ["hipfft (ROCm 6.2.4)"]


def test_the_orphans_to_remove_come_from_the_phase_s_previous_plan():
    node = copy.deepcopy(probe(CONVERGED))
    node["autoremove"] = ["libold1", "libnew2"]
    plan = plan_sdk.plan(node, SDK, inputs(), previous={"orphans_before": ["libold1"]})
    assert plan["purge_orphans"] == ["libnew2"]
    assert plan_sdk.plan(node, SDK, inputs())["purge_orphans"] == []


# The ROCm Core SDK (rocm-reference.md 13): one runtime package per GPU target the node has, amdrocm<X.Y> for all
# targets where it has none, and the development meta-package of the same targets on a build node.
MI300X = {"bdf": "0000:0c:00.0", "name": "MI300X", "device_id": "74a1", "gfx_target": "gfx942"}
RX6900XT = {"bdf": "0000:03:00.0", "name": "RX 6900 XT", "device_id": "73bf", "gfx_target": "gfx1030"}


def core_node(*gpus):
    node = copy.deepcopy(probe(CONVERGED))
    node["gpu_pci"] = dict(node.get("gpu_pci") or {}, amd=list(gpus), kfd_nodes=[])
    return node


@pytest.mark.parametrize("gpus, dev, names", [
    ([MI300X, MI300X], False, ["amdrocm10.1-gfx942"]),
    ([MI300X, RX6900XT], False, ["amdrocm10.1-gfx1030", "amdrocm10.1-gfx942"]),
    ([], False, ["amdrocm10.1"]),
    ([MI300X], True, ["amdrocm10.1-gfx942", "amdrocm-core-dev10.1-gfx942"]),
    ([], True, ["amdrocm10.1", "amdrocm-core-dev10.1"]),
])
def test_a_core_node_gets_the_packages_of_exactly_its_gpu_targets(gpus, dev, names):
    plan = plan_sdk.plan(core_node(*gpus), dict(SDK, dev_packages_enabled=dev), inputs(rocm_version="10.1.0"))
    assert [name for name, _release, _required in rocm_packages.wanted(plan["spec"])] == names
    assert plan["spec"]["kdb_default"] == []  # MIOpen's kernel database is in amdrocm-dnn<X.Y>-<target>
    assert plan["alternative"] is None and plan["set_alternative"] is None  # /opt/rocm is AMD's alternative


def test_legacy_to_core_removes_the_legacy_packages_first_and_downloads_before():
    node = core_node(MI300X)
    legacy = sorted(name for name, (_abbrev, version) in node["packages"].items() if ".60204-" in version)
    node["candidates"] = {"amdrocm10.1-gfx942": ["10.1.0-2"]}
    packages = plan_sdk.plan(node, SDK, inputs(rocm_version="10.1.0"))["packages"]
    assert packages["install"] == ["amdrocm10.1-gfx942=10.1.0-2"]
    assert packages["prepurge"] == legacy and packages["download_first"] and packages["purge"] == []


def test_core_10_0_to_10_1_is_an_ordinary_upgrade_and_a_patch_moves_in_place():
    installed = {"amdrocm10.0-gfx942": {"status": "ii", "version": "10.0.0-4", "installed": True},
                 "amdrocm-core10.0": {"status": "ii", "version": "10.0.0-4", "installed": True}}
    spec = {"state": "present", "source": "amd", "stream": "core", "versions": [], "kdb_default": [],
            "packages": plan_sdk.core_packages(["gfx942"], False)}
    upgrade = rocm_packages.plan_from(dict(spec, default="10.1.0"), installed,
                                      {"amdrocm10.1-gfx942": ["10.1.0-2"], "amdrocm-core10.0": ["10.0.0-4"]})
    assert upgrade["install"] == ["amdrocm10.1-gfx942=10.1.0-2"] and upgrade["prepurge"] == []
    assert upgrade["purge"] == ["amdrocm-core10.0", "amdrocm10.0-gfx942"]  # after the install, as any upgrade
    patch = rocm_packages.plan_from(dict(spec, default="10.0.1"), installed,
                                    {"amdrocm10.0-gfx942": ["10.0.1-1", "10.0.0-4"],
                                     "amdrocm-core10.0": ["10.0.1-1", "10.0.0-4"]})
    assert patch["install"] == ["amdrocm10.0-gfx942=10.0.1-1", "amdrocm-core10.0=10.0.1-1"]
    assert patch["purge"] == [] and patch["prepurge"] == []


def test_core_back_to_legacy_removes_the_core_packages_first():
    node = copy.deepcopy(probe(CONVERGED))
    node["packages"] = {"amdrocm10.1-gfx90a": ["ii ", "10.1.0-2"], "amdrocm-core10.1": ["ii ", "10.1.0-2"]}
    node["candidates"] = {"rocm-hip-sdk": ["6.2.4.60204-139~22.04"], "rocblas": ["4.2.4.60204-139~22.04"],
                          "miopen-hip": ["3.2.0.60204-139~22.04"]}
    packages = plan_sdk.plan(node, dict(SDK, kdb_enabled=False), inputs())["packages"]
    assert packages["prepurge"] == ["amdrocm-core10.1", "amdrocm10.1-gfx90a"] and packages["download_first"]
    assert rocm_packages.removable({}, {"amdrocm-core10.1": {"status": "ii", "version": "10.1.0-2",
                                                             "installed": True}}) == ["amdrocm-core10.1"]
