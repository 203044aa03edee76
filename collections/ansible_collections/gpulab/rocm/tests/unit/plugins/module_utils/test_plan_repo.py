"""The 7.x sources rocm_repo writes (rocm.list with the graphics repository, amdgpu.list with the driver's own
number) and the driver checks, from the release table; over the real fresh-host probe (fixtures/probe/SOURCES.md)."""

import copy
import json
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_driver, plan_repo, stack
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures", "probe")
BASE = "http://127.0.0.1:8080"
KEYRING = "[arch=amd64 signed-by=%s]" % ns.KEYRING


def fresh(distribution="Debian", version="13", container=False):
    with open(os.path.join(FIXTURES, "trixie-fresh-no-apt-lists.json")) as handle:
        node = json.load(handle)
    node = copy.deepcopy(node)
    node["os"].update(distribution=distribution, version=version)
    node.setdefault("gpu_pci", {})["in_container"] = container
    return node


def wanted(**over):
    value = {"state": "present", "base_url": BASE, "key_url": BASE + "/rocm/rocm.gpg.key",
             "key_fingerprints": ["CA8BB4727A47B4D09B4EE8969386B48A1A693C5C"], "keyring": ns.KEYRING,
             "amdgpu_version": "", "architecture": "amd64", "pin_origin": "repo.radeon.com", "pin_priority": 600}
    value.update(over)
    return value


def inputs(**values):
    return stack.resolve(dict({"rocm_gpu_users": []}, **values))


def test_the_default_release_writes_rocm_graphics_and_its_own_driver():
    files = plan_repo.contents(fresh(), wanted(), inputs())
    rocm = [line for line in files[ns.SOURCES_FILE].splitlines() if line.startswith("deb ")]
    assert rocm == ["deb %s %s/rocm/apt/7.2.3 noble main" % (KEYRING, BASE),
                    "deb %s %s/graphics/7.2.3/ubuntu noble main" % (KEYRING, BASE)]
    driver = [line for line in files[ns.AMDGPU_SOURCES_FILE].splitlines() if line.startswith("deb ")]
    # Debian: AMD's Debian page writes arch=amd64 (its Ubuntu page amd64,i386).
    assert driver == ["deb %s %s/amdgpu/30.30.3/ubuntu noble main" % (KEYRING, BASE)]
    assert "amdgpu kernel driver 30.30.3 for ROCm 7.2.3" in files[ns.AMDGPU_SOURCES_FILE]


def test_ubuntu_driver_line_has_i386_and_bookworm_takes_jammy():
    files = plan_repo.contents(fresh("Ubuntu", "24.04"), wanted(), inputs(rocm_version="7.0.2"))
    assert ("deb [arch=amd64,i386 signed-by=%s] %s/amdgpu/30.10.2/ubuntu noble main" % (ns.KEYRING, BASE)
            in files[ns.AMDGPU_SOURCES_FILE])
    files = plan_repo.contents(fresh("Debian", "12"), wanted(), inputs(rocm_version="7.2"))
    assert "%s/rocm/apt/7.2 jammy main" % BASE in files[ns.SOURCES_FILE]
    assert "%s/graphics/7.2/ubuntu jammy main" % BASE in files[ns.SOURCES_FILE]
    assert "%s/amdgpu/30.30/ubuntu jammy main" % BASE in files[ns.AMDGPU_SOURCES_FILE]


def test_side_by_side_6_and_7_share_one_file_and_one_driver():
    files = plan_repo.contents(fresh("Debian", "12"), wanted(),
                               inputs(rocm_version="7.2.3", rocm_versions=["7.2.3", "6.2.4"]))
    lines = [line.split("] ", 1)[1] for line in files[ns.SOURCES_FILE].splitlines() if line.startswith("deb ")]
    assert lines == ["%s/rocm/apt/7.2.3 jammy main" % BASE, "%s/graphics/7.2.3/ubuntu jammy main" % BASE,
                     "%s/rocm/apt/6.2.4 jammy main" % BASE]
    assert files[ns.AMDGPU_SOURCES_FILE].count("deb ") == 1 and "amdgpu/30.30.3/" in files[ns.AMDGPU_SOURCES_FILE]


def test_6x_keeps_its_layout():
    files = plan_repo.contents(fresh("Debian", "12"), wanted(), inputs(rocm_version="6.2.4"))
    assert "graphics" not in files[ns.SOURCES_FILE]
    assert "%s/amdgpu/6.2.4/ubuntu jammy main" % BASE in files[ns.AMDGPU_SOURCES_FILE]


def test_a_container_gets_no_driver_source():
    files = plan_repo.contents(fresh(container=True), wanted(), inputs())
    assert ns.AMDGPU_SOURCES_FILE not in files and "graphics/7.2.3" in files[ns.SOURCES_FILE]


def test_the_override_is_written_when_new_enough():
    files = plan_repo.contents(fresh(), wanted(amdgpu_version="30.20.1"), inputs())
    assert "amdgpu/30.20.1/ubuntu" in files[ns.AMDGPU_SOURCES_FILE]


@pytest.mark.parametrize("override", ["6.4.3", "6.2.4", "23.20"])
def test_a_driver_too_old_is_refused_before_any_change_with_the_table_answer(override):
    with pytest.raises(PlanError) as err:
        plan_repo.plan(fresh(), wanted(amdgpu_version=override), inputs())
    text = str(err.value)
    assert "too old for ROCm 7.2.3" in text and "30.30.3" in text and "Nothing was changed" in text


def test_an_old_override_is_not_checked_where_no_driver_is_wanted():
    plan = plan_repo.plan(fresh(container=True), wanted(amdgpu_version="6.4.3"), inputs())
    assert ns.AMDGPU_SOURCES_FILE not in plan["contents"]


def test_a_7x_release_outside_the_table_needs_the_driver_named():
    with pytest.raises(PlanError, match="7.2.4 is not in the release table.*rocm_repo_amdgpu_version"):
        plan_repo.plan(fresh(), wanted(), inputs(rocm_version="7.2.4"))
    files = plan_repo.contents(fresh(), wanted(amdgpu_version="30.30.3"), inputs(rocm_version="7.2.4"))
    assert "amdgpu/30.30.3/ubuntu" in files[ns.AMDGPU_SOURCES_FILE]


def test_the_driver_plan_pins_the_driver_s_own_number():
    driver = plan_driver.plan(fresh(), {"packages": ["amdgpu-dkms"], "headers_package": "", "reboot": True},
                              inputs())
    assert driver["install"] == ["amdgpu-dkms=*.30300300-*"]
    node = fresh()
    node["packages"] = {"amdgpu-dkms": ["ii ", "1:6.14.14.30300300-2200000.24.04"]}
    driver = plan_driver.plan(node, {"packages": ["amdgpu-dkms"], "headers_package": "", "reboot": True}, inputs())
    assert driver["install"] == []
    node["packages"] = {"amdgpu-dkms": ["ii ", "1:6.8.5.60204-2044426.24.04"]}
    driver = plan_driver.plan(node, {"packages": ["amdgpu-dkms"], "headers_package": "", "reboot": True}, inputs())
    assert driver["install"] == ["amdgpu-dkms=*.30300300-*"]


def test_therock_releases_are_refused_by_the_stack():
    with pytest.raises(stack.StackError, match="TheRock"):
        inputs(rocm_version="7.13.0")
