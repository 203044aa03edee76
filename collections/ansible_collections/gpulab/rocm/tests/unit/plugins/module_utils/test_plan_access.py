"""rocm_access's planner (plan_access.py): the groups in adduser.conf (issue 10, bug 3) and its block."""

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_access
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.plan_helpers import ACCESS, CONVERGED, inputs, probe


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
