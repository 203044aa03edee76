"""rocm_sdk's planner (plan_sdk.py) over real probes (fixtures/probe/SOURCES.md): the packages with the candidates
apt offers, holds, packages apt does not offer, the repair, orphans, and the values it refuses."""

import copy

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_sdk
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
