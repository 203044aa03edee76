"""rocm_env's planner (plan_env.py): the values it refuses or quotes, the users' bashrc blocks, the shared MIOpen
folder, and su where the host has no sudo."""

import copy

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_env
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import CONVERGED, ENV, inputs, probe


@pytest.mark.parametrize("wanted, message", [
    ({"rocm_path": "/opt/rocm$(id)"}, "rocm_env_rocm_path must be an absolute path"),
    ({"miopen_dir": '/scratch/"x'}, "rocm_env_miopen_dir must be an absolute path"),
    ({"extra_variables": {"1BAD": "x"}}, "not shell variable names"),
    ({"extra_variables": {"LD_PRELOAD": "/tmp/x.so"}}, "may not set LD_PRELOAD"),
])
def test_environment_values_are_refused(wanted, message):
    with pytest.raises(PlanError, match=message):
        plan_env.plan(probe(CONVERGED), dict(ENV, **wanted), inputs())


def test_environment_values_are_shell_quoted():
    plan = plan_env.plan(probe(CONVERGED), dict(ENV, extra_variables={"NOTE": "$(touch /tmp/x) 'q'"}), inputs())
    assert "export NOTE=''\"'\"'$(touch /tmp/x) '\"'\"'q'\"'\"''\n" not in plan["files"][ns.PROFILE_FILE]
    assert "export NOTE='$(touch /tmp/x) '\"'\"'q'\"'\"''" in plan["files"][ns.PROFILE_FILE]


def test_a_bashrc_the_role_must_not_touch_is_left_with_a_notice():
    node = copy.deepcopy(probe(CONVERGED))
    node["users"]["alice"]["bashrc"].update(type="symlink", target="/etc/shadow", block=None)
    node["users"]["bob"]["bashrc"].update(markers="broken", block=None, begin_lines=[120], end_lines=[100])
    plan = plan_env.plan(node, ENV, inputs())
    assert plan["bashrc"] == {}
    assert any("is a symlink: not changed" in n for n in plan["notices"])
    assert any("markers out of order" in n and "none of its lines are lost" in n for n in plan["notices"])


def test_bashrc_block_markers():
    text = "a\n# BEGIN gpulab.rocm environment\nexport X=1\n# END gpulab.rocm environment\nb\n"
    assert ns.bashrc_block("f", text) == {"block": "export X=1", "markers": "one"}
    assert ns.bashrc_block("f", "a\n")["markers"] == "none"
    broken = "# END gpulab.rocm environment\nmine\n# BEGIN gpulab.rocm environment\n"
    assert ns.bashrc_block("f", broken)["markers"] == "broken"


@pytest.mark.parametrize("current, parent, outcome", [
    ({"exists": False}, {"exists": True, "type": "directory", "uid": 0, "mode": "0755"}, "make"),
    ({"exists": True, "type": "directory", "uid": 0, "mode": "1777"}, {"exists": True, "type": "directory", "uid": 0,
                                                                       "mode": "0755"}, "keep"),
    ({"exists": True, "type": "symlink", "uid": 1002}, {"exists": True, "type": "directory", "uid": 0, "mode": "0755"},
     "is a symlink of uid 1002"),
    ({"exists": True, "type": "directory", "uid": 1002, "mode": "0700"},
     {"exists": True, "type": "directory", "uid": 0, "mode": "0755"}, "is a directory of uid 1002"),
    ({"exists": False}, {"exists": True, "type": "directory", "uid": 0, "mode": "1777"}, "which others can change"),
])
def test_the_shared_miopen_folder_is_never_taken_from_a_user(current, parent, outcome):
    # Issue 15, item 4: root must not take over (or follow) a folder a user made first.
    node = copy.deepcopy(probe(CONVERGED))
    node["paths"] = {"/scratch/mio": current, "/scratch": parent}
    wanted = dict(ENV, miopen_dir="/scratch/mio")
    if outcome in ("make", "keep"):
        plan = plan_env.plan(node, wanted, inputs())
        assert plan["miopen_dir"] == ("/scratch/mio" if outcome == "make" else None)
    else:
        with pytest.raises(PlanError, match=outcome):
            plan_env.plan(node, wanted, inputs())


def test_users_files_are_written_through_su_where_the_host_has_no_sudo(tmp_path):
    # Seen on the lent Ubuntu 24.04 host (docs/device-runs.md): no sudo, so becoming a GPU user through sudo failed
    # ("sudo: not found") when the bashrc block was written. The probe says whether sudo is there; the plan picks.
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_common
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text('ID=ubuntu\nNAME="Ubuntu"\nVERSION_ID="24.04"\n')
    bare = ns.os_facts(str(tmp_path), "6.8.0", "x86_64")
    assert bare["sudo"] is False
    assert plan_common.user_become_method({"os": bare}) == "ansible.builtin.su"
    (tmp_path / "usr" / "bin").mkdir(parents=True)
    (tmp_path / "usr" / "bin" / "sudo").write_text("#!/bin/sh\n")
    (tmp_path / "usr" / "bin" / "sudo").chmod(0o755)
    assert ns.os_facts(str(tmp_path), "6.8.0", "x86_64")["sudo"] is True
    assert plan_common.user_become_method({"os": ns.os_facts(str(tmp_path))}) == "ansible.builtin.sudo"
    # A probe from before the key existed: the roles keep using sudo, as they always did.
    assert plan_common.user_become_method({"os": {}}) == "ansible.builtin.sudo"


def test_a_legacy_release_keeps_opt_rocm_and_the_linker_file_a_real_run_wrote():
    # The converged probe holds the files rocm_env wrote for 6.2.4 (fixtures/probe/SOURCES.md): nothing differs.
    plan = plan_env.plan(probe(CONVERGED), ENV, inputs())
    assert plan["changes"] == [] and plan["files"] == {}
    written = probe(CONVERGED)["files"][ns.LDCONFIG_FILE]["content"]
    assert written == plan_env.HEADER + "/opt/rocm/lib\n/opt/rocm/lib64\n"
    assert plan["variables"]["ROCM_PATH"] == "/opt/rocm"


def test_a_core_release_points_the_environment_and_the_linker_at_its_own_folder():
    # The ROCm Core SDK (rocm-reference.md 13): /opt/rocm/core-X.Y; /opt/rocm is a folder of alternatives there, and
    # the packages register no library folder with the linker (TheRock#6716).
    plan = plan_env.plan(probe(CONVERGED), ENV, inputs(rocm_version="10.1.0"))
    assert plan["variables"]["ROCM_PATH"] == "/opt/rocm/core-10.1"
    profile = plan["files"][ns.PROFILE_FILE]
    assert "export ROCM_PATH=/opt/rocm/core-10.1\n" in profile
    assert '  *) export PATH="${PATH:+${PATH}:}/opt/rocm/core-10.1/bin" ;;\n' in profile
    assert plan["files"][ns.LDCONFIG_FILE] == plan_env.HEADER + "/opt/rocm/core-10.1/lib\n"
    assert plan["ldconfig"] is True
    assert {"change": "write %s" % ns.LDCONFIG_FILE, "reason": "it differs"} in plan["changes"]
    # The users' blocks follow (the same lines).
    assert "export ROCM_PATH=/opt/rocm/core-10.1" in plan["bashrc"]["alice"]


def test_side_by_side_core_releases_follow_the_default_release():
    plan = plan_env.plan(probe(CONVERGED), ENV, inputs(rocm_version="10.0", rocm_versions=["10.1.0", "10.0.0"]))
    assert plan["variables"]["ROCM_PATH"] == "/opt/rocm/core-10.0"
    assert plan["files"][ns.LDCONFIG_FILE] == plan_env.HEADER + "/opt/rocm/core-10.0/lib\n"
    # A root the admin names wins, as for a legacy release.
    named = plan_env.plan(probe(CONVERGED), dict(ENV, rocm_path="/opt/rocm"), inputs(rocm_version="10.1.0"))
    assert named["variables"]["ROCM_PATH"] == "/opt/rocm"
    assert named["files"][ns.LDCONFIG_FILE] == plan_env.HEADER + "/opt/rocm/lib\n"


@pytest.mark.parametrize("release, override, arch", [("7.2.4", "11.0.0", "gfx1100"), ("10.1.0", None, "gfx1102")])
def test_an_rx_7600_needs_its_override_on_legacy_only(release, override, arch):
    # gfx1102 (Navi33) is native in the Core SDK (one amdrocm<X.Y>-gfx1102 package), not in the legacy stream.
    names = dict(plan_env.variables(probe(CONVERGED), dict(ENV, gfx_targets=["gfx1102"]),
                                    inputs(rocm_version=release))[0])
    assert names.get("HSA_OVERRIDE_GFX_VERSION") == override and names["PYTORCH_ROCM_ARCH"] == arch
