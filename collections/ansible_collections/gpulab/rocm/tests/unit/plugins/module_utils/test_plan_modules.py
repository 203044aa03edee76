"""rocm_modules' planner (plan_modules.py) over a real probe (the converged Debian 12 host) whose modules section is
read by the probe's own reader (node_state.modules_state) from a folder tree made here: releases side by side, a
modulefile of the lab's, the default marker, a dropped release, a switch of tool, and what it refuses."""

import copy
import json
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import (
    modulefile, plan_env, plan_modules, planner, stack,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
CONVERGED = "bookworm-converged-rocm6.2.4-fixture-tools-mi250x.json"
LMOD = "/etc/lmod/modules"
ENVMOD = "/etc/environment-modules/modules"
WANTED = {"state": "present", "tool": "auto", "install": False, "path": "", "hsa_override_enabled": True,
          "gfx_targets": []}
SIDE_BY_SIDE = {"rocm_version": "6.2", "rocm_versions": ["6.2.4", "6.2"]}


def probe(name):
    with open(os.path.join(FIXTURES, "probe", name)) as handle:
        return json.load(handle)


def inputs(**values):
    return stack.resolve(dict({"rocm_gpu_users": ["alice"]}, **values))


def write(root, path, text):
    full = os.path.join(str(root), path.lstrip("/"))
    os.makedirs(os.path.dirname(full), exist_ok=True)
    with open(full, "w") as handle:
        handle.write(text)


def tree(root, releases=("6.2.0", "6.2.4"), opt_rocm="rocm-6.2.0", lmod=True):
    """A host's /opt and modulefile folders, as AMD's packages and Debian's lmod leave them."""
    for version in releases:
        write(root, "/opt/rocm-%s/.info/version" % version, "%s-66\n" % version)
    os.makedirs(os.path.join(str(root), "opt"), exist_ok=True)
    if opt_rocm:
        os.symlink(opt_rocm, os.path.join(str(root), "opt/rocm"))
    if lmod:
        os.makedirs(os.path.join(str(root), LMOD.lstrip("/")))
    write(root, "/etc/ld.so.conf.d/rocm.conf", "/opt/rocm/lib\n/opt/rocm/lib64\n")


def node_of(root, packages=("lmod",), dirs=(LMOD, ENVMOD)):
    """The converged probe with the modules section read from root. The tree belongs to the test's user; the probe
    on a host reads root's folders, so owners read as root here."""
    node = copy.deepcopy(probe(CONVERGED))
    for name in packages:
        node["packages"][name] = ["ii ", "1.0"]
    state = ns.modules_state(str(root), list(dirs))
    for entry in state["dirs"].values():
        for info in [entry["state"], entry["rocm"]] + list(entry["files"].values()):
            if info.get("exists"):
                info.update(uid=0, gid=0)
    node["modules"] = state
    node["sections"] = sorted(set(node["sections"]) | {"modules"})
    return node


def apply(root, result):
    """What the role's tasks do with a plan: make the folders, write and remove the files."""
    for path in result["dirs"]:
        os.makedirs(os.path.join(str(root), path.lstrip("/")), exist_ok=True)
    for path, content in result["files"].items():
        write(root, path, content)
        os.chmod(os.path.join(str(root), path.lstrip("/")), 0o644)
    for path in result["remove"]:
        os.unlink(os.path.join(str(root), path.lstrip("/")))


def test_side_by_side_releases_get_a_modulefile_each_and_the_default_is_marked(tmp_path):
    tree(tmp_path)
    result = plan_modules.plan(node_of(tmp_path), WANTED, inputs(**SIDE_BY_SIDE))
    assert result["tool"] == "lmod" and result["folder"] == LMOD
    assert result["releases"] == ["6.2.0", "6.2.4"] and result["default"] == "6.2.0"
    assert result["dirs"] == [LMOD + "/rocm"]
    assert sorted(result["files"]) == [LMOD + "/rocm/.version", LMOD + "/rocm/6.2.0", LMOD + "/rocm/6.2.4"]
    assert result["files"][LMOD + "/rocm/.version"] == modulefile.version_file("6.2.0")
    assert "LD_LIBRARY_PATH" not in result["files"][LMOD + "/rocm/6.2.0"]
    assert "prepend-path LD_LIBRARY_PATH {/opt/rocm-6.2.4/lib}" in result["files"][LMOD + "/rocm/6.2.4"]
    assert result["install"] == [] and result["remove"] == []
    assert {"change": "write %s/rocm/6.2.4" % LMOD, "reason": "missing"} in result["changes"]


def test_a_converged_host_plans_nothing_and_a_dropped_release_loses_its_modulefile(tmp_path):
    tree(tmp_path)
    apply(tmp_path, plan_modules.plan(node_of(tmp_path), WANTED, inputs(**SIDE_BY_SIDE)))
    again = plan_modules.plan(node_of(tmp_path), WANTED, inputs(**SIDE_BY_SIDE))
    assert again["changes"] == [] and again["files"] == {} and again["remove"] == []

    os.unlink(os.path.join(str(tmp_path), "opt/rocm-6.2.4/.info/version"))  # the packages are gone
    dropped = plan_modules.plan(node_of(tmp_path), WANTED, inputs(rocm_version="6.2", rocm_versions=["6.2"]))
    assert dropped["remove"] == [LMOD + "/rocm/6.2.4"]
    assert dropped["changes"] == [{"change": "remove %s/rocm/6.2.4" % LMOD,
                                   "reason": "no such release under /opt any more"}]
    # 6.2.0 stays the default and alone: its file does not change.
    assert dropped["files"] == {}


def test_the_labs_own_modulefiles_are_left_alone(tmp_path):
    tree(tmp_path)
    lab = "#%Module1.0\n## the lab's own build of 5.7.1\nprepend-path PATH /sw/rocm-5.7.1/bin\n"
    write(tmp_path, LMOD + "/rocm/5.7.1", lab)
    write(tmp_path, LMOD + "/rocm/6.2.4", lab)
    result = plan_modules.plan(node_of(tmp_path), WANTED, inputs(**SIDE_BY_SIDE))
    assert LMOD + "/rocm/5.7.1" not in result["remove"] + list(result["files"])
    assert LMOD + "/rocm/6.2.4" not in result["files"]
    assert any("%s/rocm/6.2.4 is the lab's own" % LMOD in text for text in result["notices"])
    assert sorted(result["files"]) == [LMOD + "/rocm/.version", LMOD + "/rocm/6.2.0"]


def test_the_default_follows_the_stack_and_else_the_opt_rocm_link(tmp_path):
    # rocm-core's alternative: /opt/rocm -> /etc/alternatives/rocm -> /opt/rocm-6.2.4 (relative here: a tree).
    tree(tmp_path, opt_rocm="../etc/alternatives/rocm")
    os.makedirs(os.path.join(str(tmp_path), "etc/alternatives"))
    os.symlink("../../opt/rocm-6.2.4", os.path.join(str(tmp_path), "etc/alternatives/rocm"))
    node = node_of(tmp_path)
    assert plan_modules.plan(node, WANTED, inputs(rocm_version="6.2.4", rocm_versions=["6.2.4", "6.2"]))[
        "default"] == "6.2.4"
    # A default that is not installed (yet): the release /opt/rocm points at.
    assert plan_modules.plan(node, WANTED, inputs(rocm_version="5.7.1"))["default"] == "6.2.4"


def test_absent_removes_only_the_roles_files_in_every_folder(tmp_path):
    tree(tmp_path)
    apply(tmp_path, plan_modules.plan(node_of(tmp_path), WANTED, inputs(**SIDE_BY_SIDE)))
    write(tmp_path, LMOD + "/rocm/5.7.1", "#%Module1.0\n## the lab's own\n")
    result = plan_modules.plan(node_of(tmp_path), dict(WANTED, state="absent"), inputs(**SIDE_BY_SIDE))
    assert sorted(result["remove"]) == [LMOD + "/rocm/.version", LMOD + "/rocm/6.2.0", LMOD + "/rocm/6.2.4"]
    assert result["files"] == {} and result["install"] == []


def test_without_a_modules_tool_nothing_is_written_unless_asked(tmp_path):
    tree(tmp_path, lmod=False)
    result = plan_modules.plan(node_of(tmp_path, packages=()), WANTED, inputs(**SIDE_BY_SIDE))
    assert result["changes"] == [] and result["tool"] is None
    assert "rocm_modules_install: true" in result["notices"][0]
    asked = plan_modules.plan(node_of(tmp_path, packages=()), dict(WANTED, install=True), inputs(**SIDE_BY_SIDE))
    assert asked["install"] == ["environment-modules"]
    # Before the package is there (check mode), the folders it makes are planned too.
    assert asked["dirs"] == [ENVMOD, ENVMOD + "/rocm"]
    assert sorted(asked["files"]) == [ENVMOD + "/rocm/.version", ENVMOD + "/rocm/6.2.0", ENVMOD + "/rocm/6.2.4"]


def test_a_switch_of_tool_moves_the_files(tmp_path):
    tree(tmp_path)
    apply(tmp_path, plan_modules.plan(node_of(tmp_path), WANTED, inputs(**SIDE_BY_SIDE)))
    os.makedirs(os.path.join(str(tmp_path), ENVMOD.lstrip("/")))
    result = plan_modules.plan(node_of(tmp_path, packages=("environment-modules",)), WANTED, inputs(**SIDE_BY_SIDE))
    assert result["tool"] == "environment-modules"
    assert sorted(result["files"]) == [ENVMOD + "/rocm/.version", ENVMOD + "/rocm/6.2.0", ENVMOD + "/rocm/6.2.4"]
    assert sorted(result["remove"]) == [LMOD + "/rocm/.version", LMOD + "/rocm/6.2.0", LMOD + "/rocm/6.2.4"]
    assert {"change": "remove %s/rocm/6.2.0" % LMOD, "reason": "the modulefiles go to %s now" % ENVMOD} in result[
        "changes"]


def test_the_hsa_override_is_the_login_environments_for_each_release(tmp_path):
    tree(tmp_path)
    node = node_of(tmp_path)
    wanted = dict(WANTED, gfx_targets=["gfx1031"])
    result = plan_modules.plan(node, wanted, inputs(**SIDE_BY_SIDE))
    # The same decision as rocm_env's for the login shell (both call gpu_support).
    login = dict(plan_env.variables(node, {"gfx_targets": ["gfx1031"], "hsa_override_enabled": True,
                                           "pytorch_rocm_arch_enabled": True}, inputs(**SIDE_BY_SIDE))[0])
    assert login["HSA_OVERRIDE_GFX_VERSION"] == "10.3.0" and login["PYTORCH_ROCM_ARCH"] == "gfx1030"
    for version in ("6.2.0", "6.2.4"):
        text = result["files"]["%s/rocm/%s" % (LMOD, version)]
        assert "setenv HSA_OVERRIDE_GFX_VERSION {10.3.0}" in text
        assert "setenv PYTORCH_ROCM_ARCH {gfx1030}" in text
    off = plan_modules.plan(node, dict(wanted, hsa_override_enabled=False), inputs(**SIDE_BY_SIDE))
    assert "\nsetenv HSA_OVERRIDE" not in off["files"][LMOD + "/rocm/6.2.4"]


def test_other_linker_files_naming_a_release_are_reported(tmp_path):
    tree(tmp_path)
    write(tmp_path, "/etc/ld.so.conf.d/10-rocm-opencl.conf", "/opt/rocm-6.2.4/opencl/lib\n")
    result = plan_modules.plan(node_of(tmp_path), WANTED, inputs(**SIDE_BY_SIDE))
    assert any("10-rocm-opencl.conf puts /opt/rocm-6.2.4/opencl/lib" in text for text in result["notices"])
    # rocm_env's own file names /opt/rocm only: no notice for it.
    assert not any("/etc/ld.so.conf.d/rocm.conf puts" in text for text in result["notices"])


def test_the_distributions_rocm_gets_no_modulefile(tmp_path):
    tree(tmp_path)
    result = plan_modules.plan(node_of(tmp_path), WANTED, inputs(rocm_install_source="distro"))
    assert result["files"] == {} and "one release in /usr" in result["notices"][0]


@pytest.mark.parametrize("over, message", [
    ({"path": "modulefiles"}, "rocm_modules_path must be an absolute folder"),
    ({"path": "/etc"}, "rocm_modules_path must be an absolute folder"),
    ({"path": "/sw/../etc"}, "rocm_modules_path must be an absolute folder"),
    ({"tool": "spack"}, "rocm_modules_tool must be one of auto, environment-modules, lmod"),
    ({"gfx_targets": ["90a"]}, "rocm_modules_gfx_targets holds values"),
])
def test_bad_input_fails_before_any_change(tmp_path, over, message):
    tree(tmp_path)
    with pytest.raises(PlanError, match=message):
        plan_modules.plan(node_of(tmp_path), dict(WANTED, **over), inputs(**SIDE_BY_SIDE))


def test_a_folder_others_can_write_is_refused(tmp_path):
    tree(tmp_path)
    node = node_of(tmp_path)
    node["modules"]["dirs"][LMOD]["state"]["mode"] = "0777"
    with pytest.raises(PlanError, match="/etc/lmod/modules is a directory of uid 0 with mode 0777"):
        plan_modules.plan(node, WANTED, inputs(**SIDE_BY_SIDE))


def test_a_folder_of_its_own_is_probed_first(tmp_path):
    node = copy.deepcopy(probe(CONVERGED))
    wanted = dict(WANTED, path="/sw/modulefiles")
    needs = planner.probe_needs("modules", node, wanted, inputs())
    assert needs == {"sections": ["modules"], "modulefiles_dirs": [ENVMOD, LMOD, "/sw/modulefiles"]}
    tree(tmp_path)
    os.makedirs(os.path.join(str(tmp_path), "sw/modulefiles"))
    node = node_of(tmp_path, dirs=(LMOD, ENVMOD, "/sw/modulefiles"))
    assert planner.probe_needs("modules", node, wanted, inputs()) is None
    result = planner.plan("modules", node, wanted, inputs(**SIDE_BY_SIDE))
    assert sorted(result["files"]) == ["/sw/modulefiles/rocm/.version", "/sw/modulefiles/rocm/6.2.0",
                                       "/sw/modulefiles/rocm/6.2.4"]


def core_tree(root, series=("10.0", "10.1"), legacy=("7.2.4",), newest="core-10.1"):
    """A host with ROCm Core SDK releases side by side (rocm-reference.md 13): /opt/rocm is a folder holding
    core-X.Y (patch releases in place) and the core link to the newest; and a legacy release beside them."""
    for version in legacy:
        write(root, "/opt/rocm-%s/.info/version" % version, "%s-1\n" % version)
    for name in series:
        write(root, "/opt/rocm/core-%s/.info/version" % name, "%s.0\n" % name)
    if newest:
        os.symlink(newest, os.path.join(str(root), "opt/rocm/core"))
    os.makedirs(os.path.join(str(root), LMOD.lstrip("/")))
    write(root, "/etc/ld.so.conf.d/rocm.conf", "/opt/rocm/core-10.1/lib\n")


# Side by side takes one stream (stack.py); the legacy 7.2.4 under /opt is one installed another way.
CORE = {"rocm_version": "10.1.0", "rocm_versions": ["10.1.0", "10.0.0"]}


def test_core_releases_are_named_by_their_series_beside_legacy_ones(tmp_path):
    core_tree(tmp_path)
    result = plan_modules.plan(node_of(tmp_path), WANTED, inputs(**CORE))
    assert result["releases"] == ["7.2.4", "10.0", "10.1"] and result["default"] == "10.1"
    assert sorted(result["files"]) == [LMOD + "/rocm/.version", LMOD + "/rocm/10.0", LMOD + "/rocm/10.1",
                                       LMOD + "/rocm/7.2.4"]
    assert result["files"][LMOD + "/rocm/.version"] == modulefile.version_file("10.1")
    default = result["files"][LMOD + "/rocm/10.1"].splitlines()
    assert "## ROCm 10.1 (the default release), in /opt/rocm/core-10.1." in default
    assert "setenv ROCM_PATH {/opt/rocm/core-10.1}" in default
    assert "prepend-path PATH {/opt/rocm/core-10.1/bin}" in default
    assert not [line for line in default if "LD_LIBRARY_PATH" in line]
    other = result["files"][LMOD + "/rocm/10.0"].splitlines()
    assert "setenv ROCM_PATH {/opt/rocm/core-10.0}" in other
    # A Core release keeps its libraries in lib only.
    assert [line for line in other if line.startswith("prepend-path LD_LIBRARY_PATH")] == [
        "prepend-path LD_LIBRARY_PATH {/opt/rocm/core-10.0/lib}"]
    # The login environment's ROCM_PATH is the default Core release's own folder (rocm_env), restored on unload.
    assert "    unsetenv ROCM_PATH {/opt/rocm/core-10.1}" in other
    legacy = result["files"][LMOD + "/rocm/7.2.4"]
    assert "prepend-path LD_LIBRARY_PATH {/opt/rocm-7.2.4/lib64}" in legacy
    assert "setenv ROCM_PATH {/opt/rocm-7.2.4}" in legacy
    # The second run changes nothing.
    apply(tmp_path, result)
    again = plan_modules.plan(node_of(tmp_path), WANTED, inputs(**CORE))
    assert again["changes"] == [] and again["files"] == {} and again["remove"] == []


def test_a_core_default_that_is_not_installed_falls_back_to_the_core_link(tmp_path):
    # The release /opt/rocm/core points at (AMD's packages point it at the newest; 10.0 here, to tell the two apart).
    core_tree(tmp_path, legacy=(), newest="core-10.0")
    assert plan_modules.plan(node_of(tmp_path), WANTED, inputs(rocm_version="7.14.1"))["default"] == "10.0"


def test_the_core_link_is_read_where_opt_rocm_is_a_folder(tmp_path):
    core_tree(tmp_path, legacy=())
    state = ns.modules_state(str(tmp_path), [LMOD])
    assert sorted(state["releases"]) == ["10.0", "10.1"]
    assert state["releases"]["10.0"] == {"prefix": "/opt/rocm/core-10.0", "info_version": "10.0.0"}
    assert state["opt_rocm"] == "/opt/rocm/core-10.1"


def test_the_hsa_override_of_an_rx_7600_is_for_legacy_releases_only(tmp_path):
    core_tree(tmp_path)
    result = plan_modules.plan(node_of(tmp_path), dict(WANTED, gfx_targets=["gfx1102"]), inputs(**CORE))
    assert "setenv HSA_OVERRIDE_GFX_VERSION {11.0.0}" in result["files"][LMOD + "/rocm/7.2.4"]
    assert "setenv PYTORCH_ROCM_ARCH {gfx1100}" in result["files"][LMOD + "/rocm/7.2.4"]
    for name in ("10.0", "10.1"):
        assert "HSA_OVERRIDE" not in result["files"][LMOD + "/rocm/" + name]
        assert "setenv PYTORCH_ROCM_ARCH {gfx1102}" in result["files"][LMOD + "/rocm/" + name]


def test_other_linker_files_naming_a_core_release_are_reported(tmp_path):
    core_tree(tmp_path)
    write(tmp_path, "/etc/ld.so.conf.d/zz-local.conf", "/opt/rocm/core-10.0/lib\n")
    notices = plan_modules.plan(node_of(tmp_path), WANTED, inputs(**CORE))["notices"]
    assert any("zz-local.conf puts /opt/rocm/core-10.0/lib" in text for text in notices)
    assert not any("/etc/ld.so.conf.d/rocm.conf puts" in text for text in notices)
