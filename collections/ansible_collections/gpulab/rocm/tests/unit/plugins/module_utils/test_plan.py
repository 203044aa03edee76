"""The planner of every phase over real probes (fixtures/probe/SOURCES.md): a converged host plans nothing, a fresh
one plans each change with its reason, and the bugs of issue 10 stay fixed."""

import copy
import json
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import (
    plan_access, plan_driver, plan_env, plan_repo, plan_sdk, plan_verify, planner, stack,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError, sha1

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
CONVERGED = "bookworm-converged-rocm6.2.4-fixture-tools-mi250x.json"
FRESH = "trixie-fresh-no-apt-lists.json"


def probe(name):
    with open(os.path.join(FIXTURES, "probe", name)) as handle:
        return json.load(handle)


def inputs(**values):
    # The converged probe was taken at 6.2.4; the stack's default release is newer (test_plan_repo_7x.py).
    return stack.resolve(dict({"rocm_gpu_users": ["alice", "bob"], "rocm_version": "6.2.4"}, **values))


def mirror_of(node):
    """The fixture mirror's base URL and key fingerprint the converged host was provisioned with."""
    line = ns.source_lines(node["files"][ns.SOURCES_FILE]["content"])[0]
    fingerprint = node["keyrings"][ns.KEYRING]["fingerprints"][0]
    return line["uri"].split("/rocm/apt/")[0], fingerprint


def repo_wanted(node, **over):
    base, fingerprint = mirror_of(probe(CONVERGED))
    wanted = {"state": "present", "base_url": base, "key_url": base + "/rocm/rocm.gpg.key",
              "key_fingerprints": [fingerprint], "keyring": ns.KEYRING, "amdgpu_version": "",
              "architecture": "amd64", "pin_origin": "repo.radeon.com", "pin_priority": 600}
    wanted.update(over)
    return wanted


SDK = {"state": "present", "packages": ["rocm-hip-sdk", "rocblas", "miopen-hip"], "dev_packages_enabled": False,
       "dev_packages": ["rocblas-dev", "miopen-hip-dev"], "extra_packages": [], "distro_packages": [], "hold": False,
       "cache_valid_time": 86400, "kdb_enabled": True, "kdb_gfx_targets": []}
ENV = {"state": "present", "rocm_path": "", "hip_platform": "amd", "hip_path_enabled": False, "gfx_targets": [],
       "hsa_override_enabled": True, "hsa_override_gfx_version": "", "pytorch_rocm_arch_enabled": True,
       "hcc_amdgpu_target_enabled": False, "miopen_dir": "", "cuda_policy": "both", "extra_variables": {},
       "bashrc_enabled": True}
ACCESS = {"state": "present", "groups": ["video", "render"], "adduser_defaults": True}


# --- a converged host plans nothing ------------------------------------------------------------------------------

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


# --- a fresh host plans each change, with its reason -------------------------------------------------------------

def test_a_fresh_host_plans_the_repository():
    node = probe(FRESH)
    plan = plan_repo.plan(node, repo_wanted(node), inputs())
    changes = [item["change"] for item in plan["changes"]]
    assert changes == ["write /etc/apt/sources.list.d/rocm.list", "write /etc/apt/preferences.d/rocm-pin-600",
                       "install the signing key /etc/apt/keyrings/rocm.gpg"]
    assert plan["refresh_scope"] == "all" and plan["apply"] == "present"
    assert " noble main\n" in plan["files"][ns.SOURCES_FILE]  # Debian 13 uses AMD's noble suite
    assert ns.AMDGPU_SOURCES_FILE not in plan["files"]  # a container: no driver


def test_a_host_whose_archive_is_unreachable_refreshes_only_the_rocm_lists():
    # The lent Ubuntu machine: no lists, the archive unreachable; refreshing every list would fail on it.
    node = probe(FRESH)
    node["apt"] = dict(node["apt"], lists_empty=True, archive={"reachable": False, "error": "W: Failed to fetch"})
    plan = plan_repo.plan(node, repo_wanted(node), inputs())
    assert plan["refresh_scope"] == "sources" and plan["apply"] == "present"


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


# --- the bugs of issue 10 ----------------------------------------------------------------------------------------

def test_list_file_names_are_apt_s_own():
    # Bug 2: apt quotes "_" and "~" in its list-file names; rebuilding them without it refreshed on every run.
    with open(os.path.join(FIXTURES, "apt", "lists-bookworm-lab-mirror-alias-escaped.txt")) as handle:
        lines = [line.strip() for line in handle if not line.startswith("#")]
    source = ns.source_lines(lines[0])[0]
    assert ns.release_list_file(source["uri"], source["suite"]) == lines[1]
    assert ns.uri_to_filename(source["uri"] + "/dists/jammy/main/binary-amd64/Packages") == lines[2]


def test_a_mirror_url_with_quoted_characters_is_converged_once_its_lists_exist(tmp_path):
    node = probe(CONVERGED)
    base = mirror_of(node)[0] + "/lab_mirror~1"
    wanted = repo_wanted(node, base_url=base, key_url=base + "/rocm/rocm.gpg.key")
    contents = plan_repo.contents(node, wanted, inputs())
    lists = tmp_path / "var/lib/apt/lists"
    lists.mkdir(parents=True)
    source = ns.source_lines(contents[ns.SOURCES_FILE])[0]
    (lists / ns.release_list_file(source["uri"], source["suite"])).write_text("")
    node["apt"].update(ns.apt_lists(str(tmp_path), {ns.SOURCES_FILE: contents[ns.SOURCES_FILE]}))
    for path, content in contents.items():
        node["files"][path].update(type="file", sha1=sha1(content), mode="0644", uid=0, gid=0)
    assert plan_repo.plan(node, wanted, inputs())["changes"] == []


def test_a_group_taken_out_of_the_list_leaves_adduser_conf():
    # Bug 3: a group removed from rocm_access_groups stayed in EXTRA_GROUPS.
    node = probe(CONVERGED)
    text = node["files"][ns.ADDUSER_CONF]["content"]
    assert 'EXTRA_GROUPS="video render"' in text
    plan = plan_access.plan(node, dict(ACCESS, groups=["render"]), inputs())
    assert 'EXTRA_GROUPS="render"\n' in plan["files"][ns.ADDUSER_CONF]
    # The admin's own groups (a line the block superseded) stay.
    admin = text.replace("# BEGIN gpulab.rocm", '#EXTRA_GROUPS="users"  # superseded by the gpulab.rocm block below\n'
                                                "# BEGIN gpulab.rocm")
    assert 'EXTRA_GROUPS="users render"' in plan_access.adduser_conf(admin, ["render"])


def test_adduser_conf_round_trip():
    text = "# adduser.conf\nEXTRA_GROUPS=\"users\"\nADD_EXTRA_GROUPS=0\n\n"
    present = plan_access.adduser_conf(text, ["video", "render"])
    assert present.endswith('# BEGIN gpulab.rocm\nADD_EXTRA_GROUPS=1\nEXTRA_GROUPS="users video render"\n'
                            '# END gpulab.rocm\n')
    assert '#EXTRA_GROUPS="users"  # superseded by the gpulab.rocm block below' in present
    assert plan_access.adduser_conf(present, ["video", "render"]) == present
    assert plan_access.adduser_conf(present, ["video"], present=False) == text


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


# --- invalid values are refused before any change ----------------------------------------------------------------

@pytest.mark.parametrize("key, value, message", [
    ("architecture", "amd64 trusted=yes", "rocm_repo_architecture must be one word"),
    ("base_url", "http://mirror/x] trusted=yes [", r"rocm_repo_base_url must be an http\(s\)"),
    ("pin_origin", "repo.radeon.com\nPackage: *", "rocm_repo_pin_origin must be one word"),
    ("key_fingerprints", ["CA8B"], "not fingerprints"),
    ("key_fingerprints", [], "is empty"),
])
def test_repository_values_that_would_change_apt_are_refused(key, value, message):
    node = probe(CONVERGED)
    with pytest.raises(PlanError, match=message):
        plan_repo.plan(node, repo_wanted(node, **{key: value}), inputs())


@pytest.mark.parametrize("wanted, message", [
    ({"extra_packages": ["-o=APT::Get::Trivial-Only"]}, "not Debian package names"),
    ({"kdb_gfx_targets": ["gfx90a; rm"]}, "not gfx targets"),
])
def test_package_values_are_refused(wanted, message):
    with pytest.raises(PlanError, match=message):
        plan_sdk.plan(probe(CONVERGED), dict(SDK, **wanted), inputs())


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


@pytest.mark.parametrize("values, message", [
    ({"rocm_version": "6.x"}, "rocm_version"),
    ({"rocm_versions": "6.2.4"}, "rocm_versions must be a list"),
    ({"rocm_versions": ["6.2.0"], "rocm_version": "6.2.4"}, "is not among rocm_versions"),
    ({"rocm_install_source": "pip"}, "rocm_install_source must be one of"),
    ({"rocm_gpu_users": ["alice; rm -rf /"]}, "not user names"),
    # Issue 15, item 15: a $ in a name must never reach a shell or a path; refused before any change.
    ({"rocm_gpu_users": ["dash-$HOME"]}, "not user names"),
    ({"rocm_kernel_driver": "yes"}, "rocm_kernel_driver must be one of"),
    ({"rocm_apt_suite": "jammy main"}, "rocm_apt_suite must be an apt suite name"),
    ({"rocm_expected_gpu_count": "eight"}, "rocm_expected_gpu_count must be a number"),
])
def test_invalid_stack_wide_inputs(values, message):
    with pytest.raises(stack.StackError, match=message):
        stack.resolve(values)


# --- the user's files ---------------------------------------------------------------------------------------------

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


# --- the probe's parsers ----------------------------------------------------------------------------------------

def test_dpkg_status_abbreviations():
    text = ("Package: a\nStatus: install ok installed\nVersion: 1\n\nPackage: b\nStatus: hold ok installed\n"
            "Version: 2\n\nPackage: c\nStatus: deinstall ok config-files\nVersion: 3\n\n"
            "Package: d\nStatus: install reinstreq half-configured\nVersion: 4\n\n"
            "Package: e\nStatus: purge ok not-installed\n")
    assert ns.parse_dpkg_status(text) == {"a": ["ii ", "1"], "b": ["hi ", "2"], "c": ["rc ", "3"], "d": ["iFR", "4"]}


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
    assert set(planner.DERIVED_FROM_PACKAGES) <= set(refresh_after) and "packages" in refresh_after


def test_a_keyring_with_more_than_public_keys_is_replaced():
    # Issue 15, item 5: a trusted key followed by secret-key packets passed the old fingerprint check.
    node = copy.deepcopy(probe(CONVERGED))
    node["keyrings"][ns.KEYRING].update(clean=False, error="packet 6 (tag 5, Secret-Key) at byte 1204 is secret key "
                                                           "material")
    plan = plan_repo.plan(node, repo_wanted(node), inputs())
    assert plan["key"] == "install" and plan["apply"] == "present"
    assert "it holds more than public keys (packet 6 (tag 5, Secret-Key)" in plan["changes"][0]["reason"]


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


def test_the_repair_removes_nothing_but_rocm():
    # Issue 15, item 10: apt-get install --fix-broken could remove packages that have nothing to do with ROCm.
    node = copy.deepcopy(probe(CONVERGED))
    node["fix_broken"] = {"removes": ["rocblas", "nginx"], "rc": 0, "error": None}
    with pytest.raises(PlanError, match="would also remove nginx, which are not ROCm packages"):
        plan_sdk.plan(node, SDK, inputs())
    node["fix_broken"]["removes"] = ["rocblas"]
    plan_sdk.plan(node, SDK, inputs())


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


# --- rocm_verify: what it fails on, and what its messages name ---------------------------------------------------

def pci_device(bdf, name, gfx_target, driver="amdgpu", vendor="AMD"):
    """One device as gpu_pci_facts lists it (the fields the report reads)."""
    return {"bdf": bdf, "vendor": vendor, "name": name, "gfx_target": gfx_target, "driver": driver,
            "sriov_vf": False, "link": {}}


def with_pci(node, *devices):
    node["gpu_pci"]["devices"] = list(devices)
    node["gpu_pci"]["amd"] = [dev for dev in devices if dev["vendor"] == "AMD"]
    return node


def test_verify_names_the_expected_and_the_found_gpu_count():
    plan = plan_verify.plan(probe(CONVERGED), {"expected_gfx_targets": []}, inputs(rocm_expected_gpu_count=4), {"name": "n1"})
    assert plan["problems"] == ["rocminfo lists 1 GPU agent(s), expected 4 (rocm_expected_gpu_count)"]


def test_verify_names_the_missing_and_the_found_gfx_targets():
    plan = plan_verify.plan(probe(CONVERGED), {"expected_gfx_targets": ["gfx90a", "gfx942"]}, inputs(), {"name": "n1"})
    assert plan["problems"] == ["gfx targets missing: gfx942 (rocminfo lists gfx90a)"]


def test_verify_by_default_wants_every_gpu_of_the_bus_that_rocm_runs_on():
    # The MI250X rocminfo lists (0000:d1:00.0) on the bus, beside a second one and an RX 6600 (gfx1032, runs with
    # an HSA override) that rocminfo does not list, an unknown AMD device and an NVIDIA card.
    node = with_pci(probe(CONVERGED),
                    pci_device("0000:d1:00.0", "Aldebaran/MI200 [Instinct MI250X]", "gfx90a"),
                    pci_device("0000:d6:00.0", "Aldebaran/MI200 [Instinct MI250X]", "gfx90a", driver=None),
                    pci_device("0000:0b:00.0", "Navi 23 [Radeon RX 6600]", "gfx1032"),
                    pci_device("0000:0c:00.0", "unknown device 0x1234", None),
                    pci_device("0000:41:00.0", "GH100 [H200]", None, driver="nvidia", vendor="NVIDIA"))
    plan = plan_verify.plan(node, {"expected_gfx_targets": []}, inputs(), {"name": "n1"})
    assert len(plan["problems"]) == 1, plan["problems"]
    problem = plan["problems"][0]
    assert problem.startswith("rocminfo does not list 2 of the AMD GPUs on the PCI bus that ROCm 6.2.4 runs on: "
                              "0000:0b:00.0 Navi 23 [Radeon RX 6600] (gfx1032, driver amdgpu); "
                              "0000:d6:00.0 Aldebaran/MI200 [Instinct MI250X] (gfx90a, no driver bound).")
    assert "set rocm_expected_gpu_count" in problem
    # Every GPU seen: nothing to report; an explicit count is the admin's word and replaces the bus check.
    seen = with_pci(probe(CONVERGED), pci_device("0000:d1:00.0", "Aldebaran/MI200 [Instinct MI250X]", "gfx90a"))
    assert plan_verify.plan(seen, {"expected_gfx_targets": []}, inputs(), {"name": "n1"})["problems"] == []
    assert plan_verify.plan(node, {"expected_gfx_targets": []}, inputs(rocm_expected_gpu_count=1), {"name": "n1"})[
        "problems"] == []


# --- issue 19: refused in the plan pass where the probe can tell, right after the sources step where only apt can --

def held(node, name):
    abbrev, version = node["packages"][name]
    node["packages"][name] = ["h" + abbrev[1:], version]
    return node


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


def test_the_planner_hands_a_phase_its_previous_plan_and_says_nothing_about_what_changed():
    node = held(copy.deepcopy(probe(CONVERGED)), "rocblas")
    with pytest.raises(PlanError) as raised:
        planner.plan("sdk", node, SDK, inputs(rocm_version="6.2"), {"check_mode": False}, previous={})
    assert "was changed" not in str(raised.value)


def test_bad_driver_package_names_are_refused_where_the_driver_is_not_wanted_too():
    # A container does not get the driver; its bad names are still bad input, refused at the gate.
    node = probe(FRESH)
    with pytest.raises(PlanError, match=r"^rocm_driver: not Debian package names: 'amdgpu-dkms;reboot'\.$"):
        plan_driver.plan(node, {"packages": ["amdgpu-dkms;reboot"], "headers_package": "auto", "reboot": True},
                         inputs())
    assert plan_driver.plan(node, {"packages": ["amdgpu-dkms"], "headers_package": "auto", "reboot": True},
                            inputs())["wanted"] is False


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


def test_the_probe_says_whether_systemd_runs_the_host(tmp_path):
    # sd_booted(3): systemd made /run/systemd/system; rocm_metrics starts its units only there.
    (tmp_path / "etc").mkdir()
    (tmp_path / "etc" / "os-release").write_text('ID=debian\nNAME="Debian GNU/Linux"\nVERSION_ID="12"\n')
    assert ns.os_facts(str(tmp_path), "6.1.0", "x86_64")["systemd"] is False
    (tmp_path / "run" / "systemd" / "system").mkdir(parents=True)
    assert ns.os_facts(str(tmp_path), "6.1.0", "x86_64")["systemd"] is True
