"""The planner (module_utils/planning/planner.py) across its phases, over real probes (fixtures/probe/SOURCES.md): a
converged host plans nothing in any phase, a fresh one plans each change with its reason, the checks that have one
home, what the planner asks the probe for, and what it hands a phase; and the rule that finds a phase's tests by
name (issue 36): one test_plan_<phase>.py per phase of the registry."""

import copy
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import (
    plan_access, plan_driver, plan_env, plan_repo, plan_sdk, plan_verify, planner,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import (
    ACCESS, CONVERGED, ENV, FRESH, SDK, held, inputs, probe, repo_wanted,
)


# --- a converged host plans nothing -------------------------------------------------------------------------------

def test_a_converged_host_plans_no_change_in_any_phase():
    node = probe(CONVERGED)
    assert plan_repo.plan(node, repo_wanted(node), inputs())["changes"] == []
    assert plan_driver.plan(node, {"packages": ["amdgpu-dkms"], "headers_package": "auto", "reboot": True},
                            inputs())["install"] == []
    sdk = plan_sdk.plan(node, SDK, inputs())
    assert (sdk["changes"], sdk["query"]) == ([], [])
    assert plan_access.plan(node, ACCESS, inputs())["changes"] == []
    assert plan_env.plan(node, ENV, inputs())["changes"] == []
    verify = plan_verify.plan(node, {"expected_gfx_targets": ["gfx90a"]}, inputs(rocm_expected_gpu_count=1), {"name": "n1"})
    assert verify["problems"] == [] and verify["summary"] == "1 GPU agent(s): AMD Instinct MI250X (gfx90a)"


# --- a fresh host plans each change, with its reason --------------------------------------------------------------

def test_a_fresh_host_plans_packages_groups_and_environment():
    node = probe(FRESH)
    sdk = plan_sdk.plan(node, SDK, inputs())
    assert sdk["query"][:3] == ["rocm-hip-sdk", "rocblas", "miopen-hip"]
    assert "not installed: rocm-hip-sdk, rocblas, miopen-hip" in sdk["changes"][0]["reason"]
    access = plan_access.plan(node, ACCESS, inputs())
    assert access["create_groups"] == ["render"]
    assert access["memberships"] == {"alice": ["video", "render"], "bob": ["video", "render"]}
    env = plan_env.plan(node, ENV, inputs())
    assert sorted(env["files"]) == [ns.LDCONFIG_FILE, ns.PROFILE_FILE] and env["ldconfig"] is True
    assert sorted(env["bashrc"]) == ["alice", "bob"]


def test_a_missing_user_is_one_problem_at_the_gate_and_no_write_in_the_phases():
    # Issue 36: "the user exists" is preflight's check alone; access and env planned alone skip that user.
    node = probe(FRESH)
    node["users"].pop("bob")
    gate = planner.plan("preflight", node, {"gpus_required": False, "unsupported_gpu": "warn", "degraded_link": "warn",
                                            "min_free_gb": 0}, inputs())
    assert [p for p in planner.refusals("preflight", gate) if "bob" in p] == [
        "users that do not exist: bob (rocm_gpu_users); create them first"]
    access = plan_access.plan(node, ACCESS, inputs())
    assert access["memberships"] == {"alice": ["video", "render"]}
    assert not [n for n in access["notices"] if "bob" in n]
    env = plan_env.plan(node, ENV, inputs())
    assert sorted(env["bashrc"]) == ["alice"] and not [n for n in env["notices"] if "bob" in n]
    # rocm_env_state absent: nothing to remove for a user who is not there either.
    assert "bob" not in (plan_env.plan(node, dict(ENV, state="absent"), inputs())["bashrc"] or {})


def test_phases_decide_the_driver_from_the_stack_not_from_another_role():
    # Bug 1: rocm_repo read rocm_preflight's fact; with --tags repo it fell back to "no driver" on bare metal.
    node = probe(CONVERGED)
    node["gpu_pci"]["in_container"] = False
    plan = plan_repo.plan(node, repo_wanted(node), inputs())
    assert ns.AMDGPU_SOURCES_FILE in plan["files"]
    driver = plan_driver.plan(node, {"packages": ["amdgpu-dkms"], "headers_package": "", "reboot": True}, inputs())
    assert driver["wanted"] and driver["install"] == ["amdgpu-dkms=*.60204-*"]
    never = inputs(rocm_kernel_driver="never")
    assert ns.AMDGPU_SOURCES_FILE not in plan_repo.plan(node, repo_wanted(node), never)["files"]
    assert plan_driver.plan(node, {"packages": ["amdgpu-dkms"]}, never)["why_not"] == "rocm_kernel_driver is never"


def test_a_run_that_is_not_root_stops_before_any_change():
    # Issue 15, item 16: without root the roles ended in a bare "Permission denied".
    node = copy.deepcopy(probe(CONVERGED))
    node["os"]["euid"] = 1000
    with pytest.raises(PlanError, match="not root on the host .uid 1000.*become: true"):
        planner.plan("repo", node, repo_wanted(node), inputs())
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_preflight as preflight
    verdict = preflight.plan(node, {"gpus_required": False, "unsupported_gpu": "fail", "degraded_link": "warn",
                                    "min_free_gb": 0}, inputs())
    assert any("not root on the host" in problem for problem in verdict["problems"])


# --- what the planner asks the probe for, and hands a phase -------------------------------------------------------

def test_probe_needs_of_a_phase():
    node = {"sections": ["os", "packages"]}
    assert planner.probe_needs("access", node, {}, inputs()) == {"sections": ["files", "users"]}
    assert planner.probe_needs("env", dict(node, sections=planner.SECTIONS["env"]), {"miopen_dir": "/scratch/mio"},
                               inputs()) == {"sections": ["paths"], "paths": ["/scratch/mio", "/scratch"]}


def test_the_installed_releases_are_read_again_after_a_package_change():
    # The plan pass reads the modules section before rocm_sdk installs anything; once rocm_sdk read 'packages'
    # again after its change, the modules phase must plan from the releases installed now, not from the plan pass's.
    sections = list(planner.SECTIONS["modules"])
    stale = {"sections": sections, "read_at": dict((section, 1) for section in sections), "modules": {"dirs": {}}}
    assert planner.probe_needs("modules", stale, {}, inputs()) is None
    stale["read_at"]["packages"] = 3
    assert planner.probe_needs("modules", stale, {}, inputs()) == {"sections": ["modules"]}
    assert planner.probe_needs("modules", stale, {}, inputs(), fresh={"modules"}) is None
    # rocm_sdk reads the modules section again with the packages after its change: then nothing is missing.
    stale["read_at"]["modules"] = 3
    assert planner.probe_needs("modules", stale, {}, inputs()) is None
    # The same plan as test_the_package_plan_with_the_candidates_apt_offers: what it reads again after installing.
    node = probe(CONVERGED)
    installed = node["packages"]
    node["candidates"] = dict((name, [version]) for name, (_abbrev, version) in installed.items() if ".60204-" in version)
    node["packages"] = dict((name, info) for name, info in installed.items() if ".60204-" not in info[1])
    refresh_after = plan_sdk.plan(node, SDK, inputs())["refresh_after"]
    derived = [s for entry in planner.CONTRACT.values() for s in entry.get("derived_from_packages", ())]
    assert set(derived) <= set(refresh_after) and "packages" in refresh_after


def test_the_planner_hands_a_phase_its_previous_plan_and_says_nothing_about_what_changed():
    node = held(copy.deepcopy(probe(CONVERGED)), "rocblas")
    with pytest.raises(PlanError) as raised:
        planner.plan("sdk", node, SDK, inputs(rocm_version="6.2"), {"check_mode": False}, previous={})
    assert "was changed" not in str(raised.value)


# --- a phase's tests are found by its name (issue 36) ----------------------------------------------------------

HERE = os.path.dirname(os.path.abspath(__file__))
# test_plan*.py files that are not a phase's, each with why.
NOT_PHASES = {
    "test_plan_pass.py": "the plan pass and its gate (planning/plan_pass.py), which plans every phase; not a phase",
    "test_plan_uninstall.py": "the removal plans of health, metrics and containers together, applied to one tree: "
                              "the shared node code goes with the last of them",
}


def phase_test_files(names):
    """(the phases of planner.PHASES without a test_plan_<phase>.py among names, the test_plan*.py files among names
    that are neither a phase's nor in NOT_PHASES). A bare test_plan.py, the catch-all this rule replaced, is one."""
    files = set(name for name in names if name == "test_plan.py" or (name.startswith("test_plan_") and
                                                                     name.endswith(".py")))
    missing = [phase for phase in planner.PHASES if "test_plan_%s.py" % phase not in files]
    strays = sorted(name for name in files if name[len("test_plan_"):-len(".py")] not in planner.PHASES
                    and name not in NOT_PHASES)
    return missing, strays


def test_every_phase_has_its_test_file_and_every_test_plan_file_is_a_phase_s():
    missing, strays = phase_test_files(os.listdir(HERE))
    assert missing == [], "phases without their tests in test_plan_<phase>.py: %s" % ", ".join(missing)
    assert strays == [], ("test_plan_*.py files that name no phase of planner.PHASES: %s (rename them after the phase "
                          "they test, or add them to NOT_PHASES with the reason)" % ", ".join(strays))
    for name in NOT_PHASES:
        assert os.path.exists(os.path.join(HERE, name)) and name[len("test_plan_"):-len(".py")] not in planner.PHASES


def test_the_rule_finds_a_phase_without_tests_and_a_file_of_no_phase():
    names = ["test_plan_%s.py" % phase for phase in planner.PHASES if phase != "slurm_node"]
    names += ["test_plan_pass.py", "test_plan_repo_7x.py", "test_plan.py", "test_planner.py", "plan_helpers.py"]
    assert phase_test_files(names) == (["slurm_node"], ["test_plan.py", "test_plan_repo_7x.py"])


def test_no_phase_is_named_in_the_planner_the_pass_or_the_plan_action():
    # A new phase is one new module and its role: the code that runs the planning names none (its strings).
    import io
    import os
    import tokenize
    from ansible_collections.gpulab.rocm.plugins.action import plan as plan_action
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_pass
    for module in (planner, plan_pass, plan_action):
        with open(os.path.abspath(module.__file__).replace('.pyc', '.py')) as handle:
            tokens = list(tokenize.generate_tokens(io.StringIO(handle.read()).readline))
        strings = [token.string.strip('\'"') for token in tokens if token.type == tokenize.STRING]
        assert not set(strings) & set(planner.PHASES), module.__name__
