"""The plan pass and its gate (module_utils/planning/plan_pass.py): the gate's one message, what a later refusal says was
changed, and when an earlier plan still holds."""

from ansible_collections.gpulab.rocm.plugins.action.plan import tag_runs
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_pass


def three_phase_pass():
    run = plan_pass.record({}, "preflight")
    run = plan_pass.record(run, "repo", ["write /etc/apt/sources.list.d/rocm.list", "install the signing key"])
    run = plan_pass.record(run, "sdk", refusals=["rocm_sdk: rocm_sdk_extra_packages holds '-oops'."])
    run = plan_pass.record(run, "access", refusals=["rocm_access_groups holds 'gpu users'."])
    return plan_pass.record(run, "env", refusals=["rocm_env: rocm_env_rocm_path must be an absolute path."])


def test_the_gate_lists_every_phase_s_problem_in_the_order_of_the_play():
    message = plan_pass.gate_message("node1", "6.2.4", three_phase_pass())
    assert message == (
        "node1 is not ready for ROCm 6.2.4: 3 problems, found by planning every phase before any change, so nothing "
        "was changed. (1) sdk: rocm_sdk_extra_packages holds '-oops'. (2) access: rocm_access_groups holds "
        "'gpu users'. (3) env: rocm_env_rocm_path must be an absolute path.")


def test_the_same_problem_of_several_phases_is_listed_once():
    run = {}
    for phase in ("repo", "sdk"):
        run = plan_pass.record(run, phase, refusals=["%s: this run is not root on the host (uid 1000)." % phase])
    message = plan_pass.gate_message("node1", None, run)
    assert message.startswith("node1 is not ready: 1 problem,")
    assert message.endswith("(1) repo, sdk: this run is not root on the host (uid 1000).")


def test_a_gate_with_no_refusal_passes_and_a_phase_planned_again_replaces_its_refusal():
    assert plan_pass.gate_message("node1", "6.2.4", plan_pass.record({}, "repo", ["write x"])) is None
    run = plan_pass.record(plan_pass.record({}, "env", refusals=["bad"]), "env")
    assert plan_pass.gate_message("node1", "6.2.4", run) is None and run["order"] == ["env"]


def test_a_refusal_after_the_gate_names_what_the_phases_before_it_changed():
    run = plan_pass.record(plan_pass.record(plan_pass.record({}, "preflight"), "repo", ["write a", "refresh b"]),
                           "sdk", ["install c"])
    assert plan_pass.already_changed("sdk", run) == "Already changed in this run before it: repo (write a; refresh b)."
    assert plan_pass.already_changed("sdk", run, check_mode=True).startswith("Check mode: would have been changed")
    assert plan_pass.already_changed("repo", run) == "No phase before it had anything to change in this run."
    assert "not in a plan pass" in plan_pass.already_changed("env", run)


def test_a_phase_message_loses_its_claim_about_the_host():
    assert plan_pass.claim_free("rocm_repo: bad URL. Nothing was changed.") == "rocm_repo: bad URL."
    assert plan_pass.claim_free("rocm_env: bad path.") == "rocm_env: bad path."


def test_an_earlier_plan_holds_until_a_section_it_had_is_read_again():
    memo = {"key": "k", "read_at": {"os": 1, "packages": 1}, "plan": {}}
    assert plan_pass.still_holds(memo, "k", {"os": 1, "packages": 1})
    # A section read later (one this plan did not have) leaves it standing; a re-read one does not.
    assert plan_pass.still_holds(memo, "k", {"os": 1, "packages": 1, "containers": 2})
    assert not plan_pass.still_holds(memo, "k", {"os": 1, "packages": 3})
    assert not plan_pass.still_holds(memo, "other inputs", {"os": 1, "packages": 1})
    assert not plan_pass.still_holds({}, "k", {})


def test_a_converged_host_applies_only_the_phases_with_work_of_their_own():
    run = {}
    for phase in ("preflight", "repo", "sdk", "env", "verify"):
        run = plan_pass.record(run, phase, work=phase == "verify")
    assert plan_pass.applies(run) == ["verify"]


def test_every_phase_after_a_change_applies_and_the_ones_before_it_do_not():
    run = plan_pass.record(plan_pass.record({}, "repo", work=False), "sdk", ["install hip-runtime-amd"], work=False)
    run = plan_pass.record(plan_pass.record(run, "access", work=False), "env", work=False)
    # sdk's change makes it work; access and env plan again after it.
    assert run["work"] == {"repo": False, "sdk": True, "access": False, "env": False}
    assert plan_pass.applies(run) == ["sdk", "access", "env"]


def test_the_maintenance_follows_its_own_plan_only():
    # Planned last, from the other phases' changes: after a change it still applies only with work of its own (a
    # cold run on a host that is no Slurm node under upgrade.yml includes neither its drain nor its finish).
    run = plan_pass.record(plan_pass.record({}, "sdk", ["install hip-runtime-amd"]), "verify")
    quiet = plan_pass.record(run, "maintenance", work=False)
    assert plan_pass.applies(quiet) == ["sdk", "verify"]
    assert plan_pass.applies(plan_pass.record(run, "maintenance", work=True)) == ["sdk", "verify", "maintenance"]


def test_a_pass_recorded_before_work_was_kept_applies_everything():
    assert plan_pass.applies({"order": ["repo", "sdk"], "changes": {}}) == ["repo", "sdk"]
    assert plan_pass.applies({}) == []


def test_what_each_role_does_on_a_run_with_nothing_to_change():
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import planner
    quiet = {"changes": [], "notices": []}
    assert not planner.has_work("repo", quiet, {})
    # Notices are the gate's to show (plan_pass.notices): a role with nothing else to do is skipped.
    assert not planner.has_work("env", dict(quiet, notices=["MIOpen's cache folder is shared"]), {})
    assert planner.has_work("sdk", dict(quiet, changes=[{"change": "install x", "reason": "y"}]), {})
    # The driver's "why not" is said when the role runs; a pending reboot is work.
    assert not planner.has_work("driver", dict(quiet, wanted=False, why_not="a container", install=[]), {})
    assert planner.has_work("driver", dict(quiet, wanted=True, install=[], reboot_pending=True), {})
    assert planner.has_work("containers", dict(quiet, check={"engines": ["podman"]}), {})
    assert not planner.has_work("containers", dict(quiet, check={"engines": []}), {})
    assert planner.has_work("maintenance", dict(quiet, drain=False, wait=False, reboot=False, resume=True), {})
    assert not planner.has_work("maintenance", dict(quiet, drain=False, wait=False, reboot=False, resume=False), {})
    assert planner.has_work("verify", quiet, {})
    # The metrics rewrite their textfile on every run where they are on.
    assert planner.has_work("metrics", quiet, {"enabled": True})
    assert not planner.has_work("metrics", dict(quiet, skip="rocm_metrics_enabled is false"), {"enabled": False})


def test_the_gate_shows_every_phase_s_notices_once_in_the_order_of_the_play():
    run = plan_pass.record({}, "preflight", notices=["the archive cannot be reached"])
    run = plan_pass.record(run, "modules", notices=["rocm_modules: neither Lmod nor Environment Modules"])
    run = plan_pass.record(run, "health", notices=["expects 8 GPU(s)", "expects 8 GPU(s)"])
    assert plan_pass.notices(run) == ["preflight: the archive cannot be reached",
                                      "modules: neither Lmod nor Environment Modules", "health: expects 8 GPU(s)"]


def test_a_notice_is_shown_once_a_run_and_a_later_plan_shows_only_its_new_ones():
    # The gate shows every phase's notices; a role planned again at its own turn shows only what is new.
    shown = {}
    assert plan_pass.unshown({"modules": ["rocm_modules: neither Lmod nor Environment Modules"],
                              "health": ["expects 8 GPU(s)", "expects 8 GPU(s)"]}, shown) == [
        "modules: neither Lmod nor Environment Modules", "health: expects 8 GPU(s)"]
    assert plan_pass.unshown({"health": ["expects 8 GPU(s)"]}, shown) == []
    assert plan_pass.unshown({"health": ["expects 8 GPU(s)", "the data file is new"]}, shown) == [
        "health: the data file is new"]
    assert shown == {"modules": ["rocm_modules: neither Lmod nor Environment Modules"],
                     "health": ["expects 8 GPU(s)", "the data file is new"]}


def test_a_warning_never_carries_a_user_s_control_characters_to_the_admin_s_terminal():
    # A lab user's file name or marker line quoted in a notice: ESC sequences, a carriage return, a C1 CSI.
    line = plan_pass.printable("node1: env: /home/eve/.bashrc\x1b]0;owned\x07 line 2\r\x9b2J é")
    assert line == "node1: env: /home/eve/.bashrc\\x1b]0;owned\\x07 line 2\\x0d\\x9b2J é"
    assert all(ord(char) >= 0x20 and not 0x7f <= ord(char) < 0xa0 for char in line)


PASS = ["preflight", "repo", "sdk", "env", "verify", "maintenance"]


def test_the_pass_plans_what_the_run_s_tags_select_as_ansible_decides_for_tagged_tasks():
    # No --tags (Ansible's only_tags is {'all'}), site.yml's own tag, and a tag of its facts play only.
    assert plan_pass.tagged(PASS, ansible_tags({"provision"}, {"all"}, set())) == PASS
    assert plan_pass.tagged(PASS, ansible_tags({"provision"}, {"provision"}, set())) == PASS
    assert plan_pass.tagged(PASS, ansible_tags({"provision"}, {"facts"}, set())) == []
    # One phase: the probe's checks and the maintenance go with it.
    assert plan_pass.tagged(PASS, ansible_tags({"provision"}, {"sdk"}, set())) == ["preflight", "sdk", "maintenance"]
    assert plan_pass.tagged(PASS, ansible_tags(set(), {"env", "verify"}, set())) == ["preflight", "env", "verify", "maintenance"]
    # The probe's checks alone change nothing: no maintenance.
    assert plan_pass.tagged(PASS, ansible_tags(set(), {"preflight"}, set())) == ["preflight"]
    # Skipping one phase keeps the probe's checks and the maintenance; skipping preflight drops only its checks.
    assert plan_pass.tagged(PASS, ansible_tags(set(), {"all"}, {"repo"})) == ["preflight", "sdk", "env", "verify", "maintenance"]
    assert plan_pass.tagged(PASS, ansible_tags(set(), {"all"}, {"preflight"})) == ["repo", "sdk", "env", "verify", "maintenance"]
    # Skipping what every phase inherits, or everything, leaves none; so does a tag no phase has.
    assert plan_pass.tagged(PASS, ansible_tags({"provision"}, {"all"}, {"provision"})) == []
    assert plan_pass.tagged(PASS, ansible_tags(set(), {"all"}, {"all"})) == []
    assert plan_pass.tagged(PASS, ansible_tags(set(), {"tagged"}, set())) == PASS
    assert plan_pass.tagged(PASS, ansible_tags(set(), {"all"}, {"tagged"})) == []


def test_a_role_switched_off_applies_only_with_work_of_its_own():
    run = plan_pass.record(plan_pass.record({}, "sdk", ["install hip-runtime-amd"]), "containers", work=False,
                           off=True)
    run = plan_pass.record(run, "env", work=False)
    assert plan_pass.applies(run) == ["sdk", "env"]
    assert run["off"] == ["containers"]
    # Planned again, on: it follows the change again.
    assert plan_pass.applies(plan_pass.record(run, "containers", work=False)) == ["sdk", "env", "containers"]


def ansible_tags(inherited, only, skip):
    """The plan action's runs(tag, with_only_tags) for a pass task tagged always under an import tagged inherited."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.playbook.block import Block
    from ansible.playbook.play import Play
    from ansible.playbook.task import Task
    block = Block(play=Play.load({"hosts": "all", "tasks": []}, loader=DataLoader()))
    block.tags = sorted(inherited)
    task = Task(block=block)
    task.tags = ["always"]
    return tag_runs(task, sorted(only), sorted(skip), {})
