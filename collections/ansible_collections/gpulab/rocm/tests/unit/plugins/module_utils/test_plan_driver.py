"""rocm_driver's planner (plan_driver.py): the driver pinned to its own number from the release table, bad
package names refused where no driver is wanted too, and the reboot plan."""

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_driver
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import FRESH, default_inputs, fresh, inputs, probe


@pytest.mark.parametrize("version, code, other", [
    ("7.2.3", "30300300", "1:6.8.5.60204-2044426.24.04"),
    # The Core SDK's 31.x driver keeps the 8-digit code (6.19.14.31400000 is 31.40.0; rocm-reference.md 13).
    ("10.1.0", "31500000", "1:6.14.14.30300300-2200000.24.04"),
])
def test_the_driver_plan_pins_the_driver_s_own_number(version, code, other):
    wanted = {"packages": ["amdgpu-dkms"], "headers_package": "", "reboot": True}
    driver = plan_driver.plan(fresh(), wanted, default_inputs(rocm_version=version))
    assert driver["install"] == ["amdgpu-dkms=*.%s-*" % code]
    node = fresh()
    node["packages"] = {"amdgpu-dkms": ["ii ", "1:6.14.14.%s-2200000.24.04" % code]}
    assert plan_driver.plan(node, wanted, default_inputs(rocm_version=version))["install"] == []
    node["packages"] = {"amdgpu-dkms": ["ii ", other]}
    assert plan_driver.plan(node, wanted, default_inputs(rocm_version=version))["install"] == [
        "amdgpu-dkms=*.%s-*" % code]


def test_bad_driver_package_names_are_refused_where_the_driver_is_not_wanted_too():
    # A container does not get the driver; its bad names are still bad input, refused at the gate.
    node = probe(FRESH)
    with pytest.raises(PlanError, match=r"^rocm_driver: not Debian package names: 'amdgpu-dkms;reboot'\.$"):
        plan_driver.plan(node, {"packages": ["amdgpu-dkms;reboot"], "headers_package": "auto", "reboot": True},
                         inputs())
    assert plan_driver.plan(node, {"packages": ["amdgpu-dkms"], "headers_package": "auto", "reboot": True},
                            inputs())["wanted"] is False


@pytest.mark.parametrize("allows, conn, host_id, ctl_id, container, allowed", [
    (True, "ssh", "a", "b", False, True),       # allowed: reboot
    (False, "ssh", "a", "b", False, False),     # policy says no
    (True, "local", "a", "b", False, False),    # local connection
    (True, "ssh", "a\n", "a", False, False),    # the control node itself, reached over ssh
    (True, "ssh", "", "", True, False),         # a container
])
def test_reboot_plan(allows, conn, host_id, ctl_id, container, allowed):
    plan = plan_driver.reboot_plan(allows, conn, host_id, ctl_id, container)
    assert plan["allowed"] is allowed
    assert ("reboot it yourself" in plan["reason"]) is not allowed
