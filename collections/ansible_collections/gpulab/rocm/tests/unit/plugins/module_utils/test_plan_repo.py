"""rocm_repo's planner (plan_repo.py) over real probes (fixtures/probe/SOURCES.md): the sources, the pin and the
signing key of a fresh host, the lists it refreshes, the 7.x sources (rocm.list with the graphics repository,
amdgpu.list with the driver's own number) from the release table, the ROCm Core SDK's deb822 sources with its own
key, a host moving between the two streams, and the values it refuses."""

import copy
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_repo
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError, sha1
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import (
    CONVERGED, CORE_REPO, FIXTURES, FRESH, default_inputs, fresh, inputs, mirror_of, probe, repo_wanted,
)


BASE = "http://127.0.0.1:8080"

KEYRING = "[arch=amd64 signed-by=%s]" % ns.KEYRING


def wanted(**over):
    value = {"state": "present", "base_url": BASE, "key_url": BASE + "/rocm/rocm.gpg.key",
             "key_fingerprints": ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"], "keyring": ns.KEYRING,
             "amdgpu_version": "", "architecture": "amd64", "pin_origin": "repo.radeon.com", "pin_priority": 600}
    value.update(CORE_REPO, **over)
    return value


# The last release of the legacy stream the table pairs with its driver (the stack's default is a Core release).
LEGACY = {"rocm_version": "7.2.3"}


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
    ("core_base_url", "https://mirror/core\nTypes: deb-src", "rocm_repo_core_base_url must be an http"),
    ("core_key_url", "ftp://mirror/key", "rocm_repo_core_key_url must be an http"),
    ("core_key_fingerprints", ["D0F0 04A0"], "rocm_repo_core_key_fingerprints holds values that are not"),
    ("core_key_fingerprints", [], "rocm_repo_core_key_fingerprints is empty"),
    ("core_keyring", "/etc/apt/keyrings/amd rocm.gpg", "rocm_repo_core_keyring must be an absolute path"),
    ("core_keyring", ns.KEYRING, "rocm_repo_core_keyring must differ from rocm_repo_keyring"),
    ("core_pin_origin", "stable.repo.amd.com\nPackage: *", "rocm_repo_core_pin_origin must be one word"),
])
def test_repository_values_that_would_change_apt_are_refused(key, value, message):
    node = probe(CONVERGED)
    for stack in (inputs(), inputs(rocm_version="10.1.0")):
        with pytest.raises(PlanError, match=message) as err:
            plan_repo.plan(node, repo_wanted(node, **{key: value}), stack)
        assert "Nothing was changed" in str(err.value)


def test_a_keyring_with_more_than_public_keys_is_replaced():
    # Issue 15, item 5: a trusted key followed by secret-key packets passed the old fingerprint check.
    node = copy.deepcopy(probe(CONVERGED))
    node["keyrings"][ns.KEYRING].update(clean=False, error="packet 6 (tag 5, Secret-Key) at byte 1204 is secret key "
                                                           "material")
    plan = plan_repo.plan(node, repo_wanted(node), inputs())
    assert plan["key"] == {ns.KEYRING: "install"} and plan["apply"] == "present"
    assert "it holds more than public keys (packet 6 (tag 5, Secret-Key)" in plan["changes"][0]["reason"]


# --- the 7.x sources, from the release table ----------------------------------------------------------------------

def test_a_7x_release_writes_rocm_graphics_and_its_own_driver():
    files = plan_repo.contents(fresh(), wanted(), default_inputs(**LEGACY))
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
    files = plan_repo.contents(fresh(container=True), wanted(), default_inputs(**LEGACY))
    assert ns.AMDGPU_SOURCES_FILE not in files and "graphics/7.2.3" in files[ns.SOURCES_FILE]


def test_the_override_is_written_when_new_enough():
    files = plan_repo.contents(fresh(), wanted(amdgpu_version="30.20.1"), default_inputs(**LEGACY))
    assert "amdgpu/30.20.1/ubuntu" in files[ns.AMDGPU_SOURCES_FILE]


@pytest.mark.parametrize("override", ["6.4.3", "6.2.4", "23.20"])
def test_a_driver_too_old_is_refused_before_any_change_with_the_table_answer(override):
    with pytest.raises(PlanError) as err:
        plan_repo.plan(fresh(), wanted(amdgpu_version=override), default_inputs(**LEGACY))
    text = str(err.value)
    assert "too old for ROCm 7.2.3" in text and "30.30.3" in text and "Nothing was changed" in text


def test_an_old_override_is_not_checked_where_no_driver_is_wanted():
    plan = plan_repo.plan(fresh(container=True), wanted(amdgpu_version="6.4.3"), default_inputs())
    assert ns.AMDGPU_SOURCES_FILE not in plan["contents"]


@pytest.mark.parametrize("version, driver", [("7.2.5", "30.30.4"), ("10.2.0", "31.50.1")])
def test_a_release_outside_the_table_needs_the_driver_named(version, driver):
    with pytest.raises(PlanError, match="%s is not in the release table.*rocm_repo_amdgpu_version" % version):
        plan_repo.plan(fresh(), wanted(), default_inputs(rocm_version=version))
    files = plan_repo.contents(fresh(), wanted(amdgpu_version=driver), default_inputs(rocm_version=version))
    assert "amdgpu/%s/ubuntu" % driver in files[ns.AMDGPU_SOURCES_FILE]


# --- the ROCm Core SDK: AMD's deb822 sources, its own key --------------------------------------------------------

CORE_KEYRING = "/etc/apt/keyrings/amdrocm.gpg"


def core_sources(uris):
    """amdrocm-stable.sources as AMD's 10.0 install page writes it, under our header."""
    return ("# Managed by gpulab.rocm (role rocm_repo): ROCm Core SDK 10.1.0. Local changes are overwritten.\n"
            "X-Repo-Id: amdrocm-stable\n"
            "Types: deb\n"
            "URIs: %s\n"
            "Suites: stable\n"
            "Components: main\n"
            "Architectures: amd64\n"
            "Signed-By: /etc/apt/keyrings/amdrocm.gpg\n"
            "Enabled: yes\n" % uris)


@pytest.mark.parametrize("distribution, version, folder", [
    ("Ubuntu", "24.04", "ubuntu2404"), ("Debian", "12", "debian12"), ("Debian", "13", "debian13"),
])
def test_a_core_release_writes_amd_s_sources_and_the_core_pin(distribution, version, folder):
    plan = plan_repo.plan(fresh(distribution, version, container=True), wanted(), default_inputs())
    files = plan["contents"]
    assert files[ns.CORE_SOURCES_FILE] == core_sources("https://stable.repo.amd.com/rocm/core/packages/%s/" % folder)
    assert "Pin: release o=stable.repo.amd.com\nPin-Priority: 600\n" in files[ns.PIN_FILE]
    # A container: no driver, so neither rocm.list nor amdgpu.list, and only the Core key.
    assert sorted(files) == [ns.PIN_FILE, ns.CORE_SOURCES_FILE]
    assert plan["signing_keys"] == [{
        "keyring": CORE_KEYRING, "key_url": "https://stable.repo.amd.com/rocm/gpg/packages.gpg",
        "fingerprints": ["D0F004A0025A1145C7807FCD0701EAC4D5E02107"], "state": "present"}]
    assert [item["change"] for item in plan["changes"]] == [
        "write " + ns.CORE_SOURCES_FILE, "write " + ns.PIN_FILE, "install the signing key " + CORE_KEYRING]


def test_a_core_host_with_the_driver_keeps_the_driver_in_the_legacy_layout_with_its_key():
    plan = plan_repo.plan(fresh("Ubuntu", "24.04"), wanted(), default_inputs())
    files = plan["contents"]
    assert sorted(files) == [ns.PIN_FILE, ns.AMDGPU_SOURCES_FILE, ns.CORE_SOURCES_FILE]
    assert files[ns.AMDGPU_SOURCES_FILE].splitlines()[1] == (
        "deb [arch=amd64,i386 signed-by=%s] %s/amdgpu/31.50/ubuntu noble main" % (ns.KEYRING, BASE))
    assert "Signed-By: %s\n" % CORE_KEYRING in files[ns.CORE_SOURCES_FILE]
    assert [(key["keyring"], key["key_url"], key["state"]) for key in plan["signing_keys"]] == [
        (ns.KEYRING, BASE + "/rocm/rocm.gpg.key", "present"),
        (CORE_KEYRING, "https://stable.repo.amd.com/rocm/gpg/packages.gpg", "present")]
    # Debian 12 takes the driver's jammy suite, as for a legacy release.
    files = plan_repo.contents(fresh("Debian", "12"), wanted(), default_inputs())
    assert " %s/amdgpu/31.50/ubuntu jammy main\n" % BASE in files[ns.AMDGPU_SOURCES_FILE]


def test_a_lab_mirror_serves_every_core_release_with_its_own_key():
    mirror = wanted(core_base_url="http://127.0.0.1:8080/amd/core/", core_key_url="http://127.0.0.1:8080/amd/core.gpg")
    plan = plan_repo.plan(fresh("Debian", "13", container=True), mirror,
                          default_inputs(rocm_version="10.1.0", rocm_versions=["10.1.0", "7.14.1"]))
    assert "URIs: http://127.0.0.1:8080/amd/core/debian13/\n" in plan["contents"][ns.CORE_SOURCES_FILE]
    assert plan["signing_keys"][0]["key_url"] == "http://127.0.0.1:8080/amd/core.gpg"
    # Without a mirror, 7.14 and 10.x come from AMD's two repositories: one stanza names both.
    files = plan_repo.contents(fresh("Debian", "13", container=True), wanted(),
                               default_inputs(rocm_version="10.1.0", rocm_versions=["10.1.0", "7.14.1"]))
    assert ("URIs: https://stable.repo.amd.com/rocm/core/packages/debian13/ "
            "https://repo.amd.com/rocm/packages-multi-arch/debian13/\n") in files[ns.CORE_SOURCES_FILE]


def test_a_7_14_release_uses_its_own_repository_and_key():
    plan = plan_repo.plan(fresh("Ubuntu", "22.04", container=True), wanted(), default_inputs(rocm_version="7.14.0"))
    sources = plan["contents"][ns.CORE_SOURCES_FILE]
    assert "URIs: https://repo.amd.com/rocm/packages-multi-arch/ubuntu2204/\n" in sources
    assert plan["signing_keys"][0]["key_url"] == "https://repo.amd.com/rocm/packages-multi-arch/gpg/rocm.gpg"


def test_an_os_without_a_core_repository_is_refused_with_the_fix():
    with pytest.raises(PlanError) as err:
        plan_repo.plan(fresh("Ubuntu", "20.04", container=True), wanted(), default_inputs())
    text = str(err.value)
    assert "Ubuntu 20.04 has no ROCm Core SDK repository: AMD publishes Debian 12, Debian 13, Ubuntu 22.04" in text
    assert "set rocm_version to a legacy release that supports it" in text and "Nothing was changed" in text


def converged(node, wanted_values, stack):
    """The node once the plan for stack was applied: its files written, its keyrings holding the trusted keys, apt's
    lists of its sources present."""
    node = copy.deepcopy(node)
    plan = plan_repo.plan(node, wanted_values, stack)
    for path, content in plan["contents"].items():
        node["files"][path] = {"exists": True, "type": "file", "sha1": sha1(content), "mode": "0644", "uid": 0,
                               "gid": 0, "content": content}
    for key in plan["signing_keys"]:
        node["keyrings"][key["keyring"]] = {"exists": True, "type": "file", "clean": True, "mode": "0644", "uid": 0,
                                            "fingerprints": key["fingerprints"], "expired": []}
    node["apt"].update(lists_empty=False, sources=[])
    return node


def test_a_converged_core_host_plans_nothing():
    stack = default_inputs()
    node = converged(fresh("Ubuntu", "24.04"), wanted(), stack)
    plan = plan_repo.plan(node, wanted(), stack)
    assert plan["changes"] == [] and plan["apply"] is None
    assert plan["key"] == {ns.KEYRING: "keep", CORE_KEYRING: "keep"}


def test_a_legacy_container_moving_to_core_loses_rocm_list_and_the_legacy_key():
    node = probe(CONVERGED)  # a container on 6.2.4: rocm.list, the pin, the legacy key
    plan = plan_repo.plan(node, repo_wanted(node), inputs(rocm_version="10.1.0"))
    assert [(item["change"], item["reason"]) for item in plan["changes"]] == [
        ("remove " + ns.SOURCES_FILE, "ROCm 10.1.0 is a ROCm Core SDK release: its packages come from "
                                      + ns.CORE_SOURCES_FILE),
        ("write " + ns.CORE_SOURCES_FILE, "missing"),
        ("write " + ns.PIN_FILE, "its content, owner or mode differs from what is wanted"),
        ("remove the signing key " + ns.KEYRING, "no source of this host names it any more (ROCm 10.1.0 is a ROCm "
                                                 "Core SDK release and the amdgpu driver is not wanted here)"),
        ("install the signing key " + CORE_KEYRING, "the sources do not use it yet")]
    assert plan["remove"] == [ns.SOURCES_FILE]
    assert [(key["keyring"], key["state"]) for key in plan["signing_keys"]] == [
        (ns.KEYRING, "absent"), (CORE_KEYRING, "present")]


def test_a_legacy_host_with_the_driver_moving_to_core_keeps_the_legacy_key_for_the_driver():
    node = probe(CONVERGED)
    plan = plan_repo.plan(node, repo_wanted(node), inputs(rocm_version="10.1.0", rocm_kernel_driver="always"))
    assert plan["remove"] == [ns.SOURCES_FILE] and plan["key"] == {ns.KEYRING: "keep", CORE_KEYRING: "install"}
    assert "amdgpu/31.50/ubuntu jammy main" in plan["contents"][ns.AMDGPU_SOURCES_FILE]
    assert [key["state"] for key in plan["signing_keys"]] == ["present", "present"]


@pytest.mark.parametrize("container", [False, True])
def test_a_core_host_moving_back_to_legacy_loses_the_core_sources_and_key(container):
    node = converged(fresh("Debian", "12", container=container), wanted(), default_inputs())
    plan = plan_repo.plan(node, wanted(), default_inputs(**LEGACY))
    changes = dict((item["change"], item["reason"]) for item in plan["changes"])
    assert changes["remove " + ns.CORE_SOURCES_FILE] == ("ROCm 7.2.3 is a legacy release: its packages come from "
                                                         + ns.SOURCES_FILE)
    assert changes["remove the signing key " + CORE_KEYRING] == ("no source of this host names it any more (ROCm "
                                                                 "7.2.3 is a legacy release)")
    assert plan["remove"] == [ns.CORE_SOURCES_FILE]
    assert {"keyring": CORE_KEYRING, "state": "absent"} in plan["signing_keys"]
    assert "%s/rocm/apt/7.2.3 jammy main" % BASE in plan["contents"][ns.SOURCES_FILE]
    # The driver's file (now naming 7.2.3's driver) and the legacy key stay where the driver is wanted.
    if container:
        assert ns.AMDGPU_SOURCES_FILE not in plan["contents"] and plan["key"][ns.KEYRING] == "install"
    else:
        assert "amdgpu/30.30.3/ubuntu jammy main" in plan["files"][ns.AMDGPU_SOURCES_FILE]
        assert plan["key"][ns.KEYRING] == "keep"


@pytest.mark.parametrize("how", ["state", "distro"])
def test_absent_removes_both_streams_files_and_both_keyrings(how):
    stack = default_inputs()
    node = converged(fresh("Ubuntu", "24.04"), wanted(), stack)
    node["files"][ns.SOURCES_FILE] = dict(node["files"][ns.CORE_SOURCES_FILE])  # left from a legacy release
    if how == "state":
        plan = plan_repo.plan(node, wanted(state="absent"), stack)
    else:
        plan = plan_repo.plan(node, wanted(), default_inputs(rocm_install_source="distro"))
    assert plan["apply"] == "absent" and plan["contents"] == {}
    assert plan["remove"] == [ns.SOURCES_FILE, ns.CORE_SOURCES_FILE, ns.AMDGPU_SOURCES_FILE, ns.PIN_FILE]
    assert plan["signing_keys"] == [{"keyring": ns.KEYRING, "state": "absent"},
                                    {"keyring": CORE_KEYRING, "state": "absent"}]
    assert plan["key"] == {ns.KEYRING: "remove", CORE_KEYRING: "remove"}
