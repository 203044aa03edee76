"""rocm_report's planner (plan_report.py) and the fleet report's record: Slurm's view of the node, read only
where the host has Slurm."""

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf as sc
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import fleet_report, planner


SCONTROL = ("NodeName=gpu01 Arch=x86_64 CoresPerSocket=2 CPUAlloc=0 CPUTot=4 Gres=gpu:mi250x:2(S:0-1) "
            "NodeAddr=gpu01 OS=Linux 6.1.0-27-amd64 #1 SMP PREEMPT_DYNAMIC Debian 6.1.115-1 (2024-11-01) "
            "RealMemory=1 State=IDLE+DRAIN CfgTRES=cpu=4,gres/gpu=2 Reason=gres/gpu count too low [slurm@2026]\n"
            "NodeName=cpu01 Arch=x86_64 Gres=(null) State=IDLE\n")


def test_scontrol_one_liners_and_the_fleet_record():
    nodes = sc.parse_scontrol_nodes(SCONTROL)
    assert [node["NodeName"] for node in nodes] == ["gpu01", "cpu01"]
    assert nodes[0]["OS"].startswith("Linux 6.1.0-27-amd64 #1 SMP") and sc.gres_of(nodes[0]) == "gpu:mi250x:2"
    assert sc.gres_of(nodes[1]) == ""
    node = {"slurm": {"hostname": "gpu01", "files": {}}, "slurm_state": {"nodes": nodes, "error": None}}
    record = fleet_report.host_record(node, "gpu01.lab")
    assert record["slurm"]["gres"] == "gpu:mi250x:2" and record["slurm"]["state"] == "IDLE+DRAIN"
    assert "Slurm shows node gpu01 IDLE+DRAIN: gres/gpu count too low [slurm@2026]" in record["problems"]
    # slurmd -N names the node; a host with no Slurm has no slurm record.
    node["slurm"]["files"] = {"defaults": {"content": 'SLURMD_OPTIONS="-N cpu01"\n'}}
    assert fleet_report.host_record(node, "x")["slurm"]["node"] == "cpu01"
    assert fleet_report.host_record({"slurm_state": {"nodes": [], "error": "no Slurm here (no scontrol)"}},
                                    "x")["slurm"] is None


def test_the_report_reads_slurms_live_view_only_where_the_host_has_slurm():
    read = ["os", "gpus", "tools", "versions", "slurm", "health"]
    without = {"sections": read, "slurm": {"binaries": {"scontrol": None}}}
    assert planner.probe_needs("report", without, {}, {}) is None  # one module run on a host without Slurm
    with_slurm = {"sections": read, "slurm": {"binaries": {"scontrol": "/usr/bin/scontrol"}}}
    assert planner.probe_needs("report", with_slurm, {}, {})["sections"] == ["slurm", "slurm_state"]
    assert planner.probe_needs("report", with_slurm, {}, {}, fresh={"slurm", "slurm_state"}) is None
    assert planner.probe_needs("report", {"sections": []}, {}, {})["sections"] == sorted([
        "os", "gpus", "tools", "versions", "slurm", "health", "slurm_state"])


def test_the_node_class_goes_into_the_record_and_a_bad_one_stops_the_plan():
    import pytest
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_report
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
    stack = {"version": "7.2.0", "expected_gpu_count": -1}
    plan = plan_report.plan({}, {"node_class": "mi300_nodes"}, stack, {"name": "gpu01"})
    assert plan["record"]["node_class"] == "mi300_nodes" and plan["record"]["drift"] == []
    assert plan_report.plan({}, {}, stack, {"name": "gpu01"})["record"]["node_class"] == ""
    for bad in ("mi300 nodes", "x" * 65, "a\nb", "ab\n", 7):
        with pytest.raises(PlanError, match="rocm_report_node_class must be letters"):
            plan_report.plan({}, {"node_class": bad}, stack, {"name": "gpu01"})
