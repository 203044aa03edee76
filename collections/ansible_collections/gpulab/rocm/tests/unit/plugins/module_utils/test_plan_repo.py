"""rocm_repo's planner (plan_repo.py) over real probes (fixtures/probe/SOURCES.md): the sources, the pin and the
signing key of a fresh host, the lists it refreshes, the 7.x sources (rocm.list with the graphics repository,
amdgpu.list with the driver's own number) from the release table, and the values it refuses."""

import copy
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_repo
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError, sha1
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import (
    CONVERGED, FIXTURES, FRESH, default_inputs, fresh, inputs, mirror_of, probe, repo_wanted,
)


BASE = "http://127.0.0.1:8080"

KEYRING = "[arch=amd64 signed-by=%s]" % ns.KEYRING


def wanted(**over):
    value = {"state": "present", "base_url": BASE, "key_url": BASE + "/rocm/rocm.gpg.key",
             "key_fingerprints": ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"], "keyring": ns.KEYRING,
             "amdgpu_version": "", "architecture": "amd64", "pin_origin": "repo.radeon.com", "pin_priority": 600}
    value.update(over)
    return value


# --- a fresh host plans the repository ----------------------------------------------------------------------------

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


def test_a_keyring_with_more_than_public_keys_is_replaced():
    # Issue 15, item 5: a trusted key followed by secret-key packets passed the old fingerprint check.
    node = copy.deepcopy(probe(CONVERGED))
    node["keyrings"][ns.KEYRING].update(clean=False, error="packet 6 (tag 5, Secret-Key) at byte 1204 is secret key "
                                                           "material")
    plan = plan_repo.plan(node, repo_wanted(node), inputs())
    assert plan["key"] == "install" and plan["apply"] == "present"
    assert "it holds more than public keys (packet 6 (tag 5, Secret-Key)" in plan["changes"][0]["reason"]


# --- the 7.x sources, from the release table ----------------------------------------------------------------------

def test_the_default_release_writes_rocm_graphics_and_its_own_driver():
    files = plan_repo.contents(fresh(), wanted(), default_inputs())
    rocm = [line for line in files[ns.SOURCES_FILE].splitlines() if line.startswith("deb ")]
    assert rocm == ["deb %s %s/rocm/apt/7.2.3 noble main" % (KEYRING, BASE),
                    "deb %s %s/graphics/7.2.3/ubuntu noble main" % (KEYRING, BASE)]
    driver = [line for line in files[ns.AMDGPU_SOURCES_FILE].splitlines() if line.startswith("deb ")]
    # Debian: AMD's Debian page writes arch=amd64 (its Ubuntu page amd64,i386).
    assert driver == ["deb %s %s/amdgpu/30.30.3/ubuntu noble main" % (KEYRING, BASE)]
    assert "amdgpu kernel driver 30.30.3 for ROCm 7.2.3" in files[ns.AMDGPU_SOURCES_FILE]


def test_ubuntu_driver_line_has_i386_and_bookworm_takes_jammy():
    files = plan_repo.contents(fresh("Ubuntu", "24.04"), wanted(), default_inputs(rocm_version="7.0.2"))
    assert ("deb [arch=amd64,i386 signed-by=%s] %s/amdgpu/30.10.2/ubuntu noble main" % (ns.KEYRING, BASE)
            in files[ns.AMDGPU_SOURCES_FILE])
    files = plan_repo.contents(fresh("Debian", "12"), wanted(), default_inputs(rocm_version="7.2"))
    assert "%s/rocm/apt/7.2 jammy main" % BASE in files[ns.SOURCES_FILE]
    assert "%s/graphics/7.2/ubuntu jammy main" % BASE in files[ns.SOURCES_FILE]
    assert "%s/amdgpu/30.30/ubuntu jammy main" % BASE in files[ns.AMDGPU_SOURCES_FILE]


def test_side_by_side_6_and_7_share_one_file_and_one_driver():
    files = plan_repo.contents(fresh("Debian", "12"), wanted(),
                               default_inputs(rocm_version="7.2.3", rocm_versions=["7.2.3", "6.2.4"]))
    lines = [line.split("] ", 1)[1] for line in files[ns.SOURCES_FILE].splitlines() if line.startswith("deb ")]
    assert lines == ["%s/rocm/apt/7.2.3 jammy main" % BASE, "%s/graphics/7.2.3/ubuntu jammy main" % BASE,
                     "%s/rocm/apt/6.2.4 jammy main" % BASE]
    assert files[ns.AMDGPU_SOURCES_FILE].count("deb ") == 1 and "amdgpu/30.30.3/" in files[ns.AMDGPU_SOURCES_FILE]


def test_6x_keeps_its_layout():
    files = plan_repo.contents(fresh("Debian", "12"), wanted(), default_inputs(rocm_version="6.2.4"))
    assert "graphics" not in files[ns.SOURCES_FILE]
    assert "%s/amdgpu/6.2.4/ubuntu jammy main" % BASE in files[ns.AMDGPU_SOURCES_FILE]


def test_a_container_gets_no_driver_source():
    files = plan_repo.contents(fresh(container=True), wanted(), default_inputs())
    assert ns.AMDGPU_SOURCES_FILE not in files and "graphics/7.2.3" in files[ns.SOURCES_FILE]


def test_the_override_is_written_when_new_enough():
    files = plan_repo.contents(fresh(), wanted(amdgpu_version="30.20.1"), default_inputs())
    assert "amdgpu/30.20.1/ubuntu" in files[ns.AMDGPU_SOURCES_FILE]


@pytest.mark.parametrize("override", ["6.4.3", "6.2.4", "23.20"])
def test_a_driver_too_old_is_refused_before_any_change_with_the_table_answer(override):
    with pytest.raises(PlanError) as err:
        plan_repo.plan(fresh(), wanted(amdgpu_version=override), default_inputs())
    text = str(err.value)
    assert "too old for ROCm 7.2.3" in text and "30.30.3" in text and "Nothing was changed" in text


def test_an_old_override_is_not_checked_where_no_driver_is_wanted():
    plan = plan_repo.plan(fresh(container=True), wanted(amdgpu_version="6.4.3"), default_inputs())
    assert ns.AMDGPU_SOURCES_FILE not in plan["contents"]


def test_a_7x_release_outside_the_table_needs_the_driver_named():
    with pytest.raises(PlanError, match="7.2.4 is not in the release table.*rocm_repo_amdgpu_version"):
        plan_repo.plan(fresh(), wanted(), default_inputs(rocm_version="7.2.4"))
    files = plan_repo.contents(fresh(), wanted(amdgpu_version="30.30.3"), default_inputs(rocm_version="7.2.4"))
    assert "amdgpu/30.30.3/ubuntu" in files[ns.AMDGPU_SOURCES_FILE]
