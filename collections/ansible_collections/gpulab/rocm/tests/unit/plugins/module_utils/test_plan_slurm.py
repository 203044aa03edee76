"""rocm_slurm's cluster phase (module_utils/planning/plan_slurm.py) over probes of fixture sysfs trees: the lines
the role owns in an existing Slurm, the whole files of a Slurm it installs, the munge key, when a reconfigure is
enough and when a restart is needed, and the health check's and the prolog's lines."""

import copy

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_slurm, plan_slurm_node, planner, slurm_files
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError, sha1
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.slurm_helpers import NODE, RX7900XTX, TWO_MI250X, probe, record


CLUSTER = {"install": False, "conf_dir": "/etc/slurm", "controller": False, "controllers": ["ctl"], "compute": True,
           "cluster_name": "gpulab", "partition": "gpu", "slurmctld_port": 6817, "slurmd_port": 6818,
           "cgroup_enforce": True, "conf_extra": {}}

CTL = {"name": "ctl", "hostname": "ctl", "addr": "10.0.0.1", "port": 0, "compute": False, "controller": True,
       "gpus": [], "gres": "", "shape": None, "munge_key_sha1": "k" * 40}

LAB_CONF = """# The lab's own slurm.conf
ClusterName=lab
SlurmctldHost=ctl
GresTypes=mps   # GPU sharing
NodeName=gpu01 CPUs=4 Gres=mps:100 State=UNKNOWN
NodeName=cpu[01-02] CPUs=8
PartitionName=all Nodes=ALL Default=YES
"""


def cluster(node, rec, **over):
    wanted = dict(CLUSTER, record=rec, nodes={"gpu01": rec}, controller_record=CTL)
    wanted.update(over)
    return plan_slurm.plan(node, wanted, {})


def converged(node, result):
    """The node after the plan's files were written."""
    node = copy.deepcopy(node)
    for path, text in result["files"].items():
        name = path.rsplit("/", 1)[1] if path.startswith("/etc/slurm/") else "defaults"
        node["slurm"]["files"][name] = {"exists": True, "type": "file", "content": text, "sha1": sha1(text)}
    for path in result["remove"]:
        node["slurm"]["files"][path.rsplit("/", 1)[1]] = {"exists": False, "type": None}
    return node


# --- an existing Slurm: only the owned lines change ---------------------------------------------------------------

def test_an_existing_slurm_conf_keeps_everything_but_gres_types_and_the_nodes_gres(tmp_path):
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": LAB_CONF})
    rec = record(node)
    result = cluster(node, rec)
    conf = result["files"]["/etc/slurm/slurm.conf"]
    assert conf == LAB_CONF.replace("GresTypes=mps   # GPU sharing", "GresTypes=mps,gpu # GPU sharing").replace(
        "NodeName=gpu01 CPUs=4 Gres=mps:100 State=UNKNOWN", "NodeName=gpu01 CPUs=4 Gres=mps:100,gpu:mi250x:2 State=UNKNOWN")
    assert result["files"]["/etc/slurm/cgroup.conf"] == "ConstrainDevices=yes  # gpulab.rocm (role rocm_slurm)\n"
    assert result["restart"] == ["slurmd"] and not result["reconfigure"]  # GresTypes changed: slurmd restarts
    assert result["munge_key"] is None and "/etc/default/slurmd" not in result["files"]  # not the role's here
    # Written, the same plan changes nothing.
    again = cluster(converged(node, result), rec)
    assert again["changes"] == [] and again["files"] == {} and not again["reconfigure"]


def test_a_gpu_change_restarts_the_daemons_that_take_it_and_reconfigures_the_others(tmp_path):
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": LAB_CONF})
    done = converged(node, cluster(node, record(node)))
    files = dict((name, info["content"]) for name, info in done["slurm"]["files"].items() if info.get("content"))
    fewer = probe(tmp_path, TWO_MI250X[:1], files=files)
    result = cluster(fewer, record(fewer))
    assert sorted(result["files"]) == ["/etc/slurm/gres.conf", "/etc/slurm/slurm.conf"]
    assert "Gres=mps:100,gpu:mi250x:1" in result["files"]["/etc/slurm/slurm.conf"]
    # Its own node line and gres.conf changed: this slurmd restarts (Slurm takes a new GPU count only at the start),
    # after slurmctld, since its count falls (2 -> 1: registered first, it would be drained for reporting fewer).
    assert result["restart"] == ["slurmd"] and not result["reconfigure"] and not result["slurmd_first"]
    # The way back, 1 -> 2: this slurmd restarts before slurmctld.
    back = probe(tmp_path, TWO_MI250X, files=dict(files, **{
        "slurm.conf": result["files"]["/etc/slurm/slurm.conf"], "gres.conf": result["files"]["/etc/slurm/gres.conf"]}))
    assert cluster(back, record(back))["slurmd_first"]
    assert slurm_files.gpu_count("NodeName=a,b Gres=mps:100,gpu:mi300x:64\nNodeName=c Gres=gpu:2\n", "b") == 64
    assert slurm_files.gpu_count("NodeName=c Gres=gpu:2,gpu:x:1\n", "c") == 3
    assert slurm_files.gpu_count("", "c") == 0
    assert {"change": "write /etc/slurm/slurm.conf", "reason": "the GPUs of gpu01 differ (slurmd restarts: its own "
            "node line changed)"} in result["changes"]
    # The controller of the same cluster restarts slurmctld; another node (gpu02, whose GPUs stay) re-reads
    # slurm.conf on scontrol reconfigure, without a restart.
    conf = files["slurm.conf"].replace("NodeName=cpu[01-02] CPUs=8", "NodeName=gpu02 CPUs=4\nNodeName=cpu[01-02] CPUs=8")
    rec, other = record(fewer), dict(record(fewer), name="gpu02", gres="", gpus=[])
    ctl = probe(tmp_path, [], files={"slurm.conf": conf})
    result = cluster(ctl, CTL, controller=True, compute=False, nodes={"gpu01": rec, "gpu02": other})
    assert result["restart"] == ["slurmctld"] and not result["reconfigure"]
    plain = probe(tmp_path, [], files={"slurm.conf": conf, "cgroup.conf": "ConstrainDevices=yes\n"})
    result = cluster(plain, other, nodes={"gpu01": rec, "gpu02": other})
    assert list(result["files"]) == ["/etc/slurm/slurm.conf"]
    assert result["restart"] == [] and result["reconfigure"]
    assert [item["change"] for item in result["changes"]] == ["write /etc/slurm/slurm.conf",
                                                              "scontrol reconfigure (on the controller)"]
    # Another GPU model, or none at all: the same restart.
    other = probe(tmp_path, RX7900XTX, files=files)
    result = cluster(other, record(other))
    assert result["restart"] == ["slurmd"] and not result["reconfigure"]
    gone = probe(tmp_path, [], files=files)
    result = cluster(gone, record(gone))
    assert result["remove"] == ["/etc/slurm/gres.conf"]  # it held the block alone
    assert result["restart"] == ["slurmd"]
    assert slurm_files.gres_changes("GresTypes=mps\n", "GresTypes=mps,gpu\n") is None
    assert slurm_files.gres_changes("", "NodeName=a Gres=gpu:x:1\n") is None
    assert slurm_files.gres_changes("NodeName=a Gres=gpu:x:1\nNodeName=b\n",
                                    "NodeName=a Gres=gpu:x:2\nNodeName=b Gres=gpu:y:1\n") == ["a", "b"]
    assert slurm_files.gres_changes("NodeName=a CPUs=2 Gres=gpu:x:1\n", "NodeName=a CPUs=4 Gres=gpu:x:2\n") is None
    assert slurm_files.gres_changes("NodeName=n[1-2] Gres=mps:1,gpu:x:1\n", "NodeName=n[1-2] Gres=mps:1\n") == [
        "n1", "n2"]


def test_lines_the_role_cannot_own_are_refused(tmp_path):
    shared = LAB_CONF.replace("NodeName=gpu01 CPUs=4 Gres=mps:100", "NodeName=gpu0[1-2] CPUs=4")
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": shared})
    with pytest.raises(PlanError, match=r"covers nodes whose GPUs differ .* give gpu01 a NodeName line of its own"):
        cluster(node, record(node))
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": "ClusterName=lab\n"})
    with pytest.raises(PlanError, match="slurm.conf has no NodeName line for gpu01"):
        cluster(node, record(node))
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": LAB_CONF, "gres.conf": "Name=gpu File=/dev/dri/card0\n"})
    with pytest.raises(PlanError, match="gres.conf line 1 configures GPUs outside the block the role owns"):
        cluster(node, record(node))


def test_a_gres_conf_keeps_the_labs_other_lines(tmp_path):
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": LAB_CONF, "gres.conf": "Name=mps Count=100\n"})
    text = cluster(node, record(node))["files"]["/etc/slurm/gres.conf"]
    assert text.startswith("Name=mps Count=100\n\n" + slurm_files.BLOCK_BEGIN + "\nAutoDetect=off\n")
    assert text.endswith(slurm_files.BLOCK_END + "\n")


# --- a Slurm the role installs ------------------------------------------------------------------------------------

def test_an_installed_slurm_gets_whole_files_and_a_gpu_less_node_no_gres(tmp_path):
    node = probe(tmp_path, TWO_MI250X, slurm={"hostname": "host-a"})
    rec = record(node, install=True, node_addr="127.0.0.1", node_port=26819)
    cpu_only = dict(record(probe(tmp_path, []), install=True), name="cpu01")
    result = cluster(node, rec, install=True, nodes={"gpu01": rec, "cpu01": cpu_only})
    conf = result["files"]["/etc/slurm/slurm.conf"].splitlines()
    assert "SlurmctldHost=ctl(10.0.0.1)" in conf and "GresTypes=gpu" in conf
    assert "NodeName=gpu01 NodeAddr=127.0.0.1 Port=26819 CPUs=4 Sockets=2 CoresPerSocket=2 ThreadsPerCore=1 " \
           "Gres=gpu:mi250x:2 State=UNKNOWN" in conf
    assert "NodeName=cpu01 CPUs=4 Sockets=2 CoresPerSocket=2 ThreadsPerCore=1 State=UNKNOWN" in conf
    assert "TaskPlugin=task/cgroup,task/affinity" in conf and "ProctrackType=proctrack/cgroup" in conf
    assert result["files"]["/etc/slurm/cgroup.conf"].endswith("ConstrainDevices=yes\n")
    assert result["files"]["/etc/default/slurmd"] == 'SLURMD_OPTIONS="-N gpu01"\n'
    assert result["munge_key"] == "install" and result["restart"] == ["munge", "slurmd"]
    # The CPU-only node: no gres.conf at all.
    bare = probe(tmp_path, [])
    plan = cluster(bare, cpu_only, install=True, nodes={"cpu01": cpu_only})
    assert "/etc/slurm/gres.conf" not in plan["files"] and plan["remove"] == []


def test_an_installed_slurm_keeps_node_lines_of_hosts_the_run_did_not_read(tmp_path):
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": "NodeName=old01 CPUs=2 State=UNKNOWN\n"})
    rec = record(node, install=True)
    conf = cluster(node, rec, install=True)["files"]["/etc/slurm/slurm.conf"]
    assert "NodeName=old01 CPUs=2 State=UNKNOWN" in conf.splitlines()


def test_the_munge_key_is_made_on_the_controller_and_copied_to_the_others(tmp_path):
    node = probe(tmp_path, [], slurm={"daemons": {}})
    rec = record(node, install=True, controller=True, compute=False)
    ctl = dict(rec, name="ctl", munge_key_sha1=None)
    result = cluster(node, rec, install=True, controller=True, compute=False, controller_record=ctl, nodes={})
    assert result["munge_key"] == "create" and result["start"] == ["munge", "slurmctld"]
    same = {"exists": True, "type": "file", "sha1": "k" * 40, "mode": "0400", "uid": 101}
    node = probe(tmp_path, TWO_MI250X, slurm={"munge_key": same})
    assert cluster(node, record(node, install=True), install=True)["munge_key"] is None
    node["slurm"]["munge_key"] = dict(same, mode="0644")
    assert cluster(node, record(node, install=True), install=True)["munge_key"] == "fix"
    node["slurm"]["munge_key"] = dict(same, sha1="x" * 40)
    assert cluster(node, record(node, install=True), install=True)["munge_key"] == "install"
    # A symlink in its place is refused (root neither follows nor replaces it).
    node["slurm"]["munge_key"] = {"exists": True, "type": "symlink", "target": "/home/someone/key"}
    with pytest.raises(PlanError, match="munge.key is a symlink, not a file: root does not follow"):
        cluster(node, record(node, install=True), install=True)


@pytest.mark.parametrize("over, words", [
    ({"cluster_name": "Lab Cluster"}, "rocm_slurm_cluster_name must be"),
    ({"partition": "gpu Nodes=ALL"}, "rocm_slurm_partition must be a partition name"),
    ({"slurmd_port": "x"}, "rocm_slurm_slurmd_port must be a TCP port"),
    ({"conf_extra": {"MaxJobCount": "10 # x"}}, "the value of MaxJobCount must be one word"),
    ({"conf_extra": {"GresTypes": "gpu"}}, "'GresTypes' is not a slurm.conf key the role leaves to you"),
    ({"controllers": ["a", "b"]}, "must hold exactly one host, it holds a, b"),
    ({"controller_record": {}}, "the controller ctl is not in this run"),
])
def test_bad_cluster_values_are_refused_before_any_change(tmp_path, over, words):
    node = probe(tmp_path, TWO_MI250X)
    with pytest.raises(PlanError) as failure:
        cluster(node, record(node), install=True, **over)
    assert words in str(failure.value)


def test_the_planner_runs_both_phases_as_root_only(tmp_path):
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": LAB_CONF})
    assert planner.plan("slurm_node", node, NODE, {})["node"]["gres"] == "gpu:mi250x:2"
    node["os"]["euid"] = 1000
    with pytest.raises(PlanError, match="not root"):
        planner.plan("slurm", node, CLUSTER, {})


# --- a whole cluster, as the role runs it: every record, then every host's plan, applied, planned again -----------

def run_cluster(hosts, install=True):
    """One run of the role over {host: probe}: the records, each host's plan, its files written into the probe."""
    roles = {"ctl": (True, False), "n1": (False, True), "n2": (False, True)}
    records = dict((name, plan_slurm_node.plan(node, dict(NODE, node_name=name, install=install,
                                                          controller=roles[name][0], compute=roles[name][1],
                                                          node_addr="127.0.0.1"), {})["node"])
                   for name, node in hosts.items())
    plans = {}
    for name, node in hosts.items():
        plans[name] = plan_slurm.plan(node, dict(CLUSTER, install=install, controller=roles[name][0],
                                                 compute=roles[name][1], record=records[name], nodes=records,
                                                 controller_record=records["ctl"]), {})
    for name, result in plans.items():
        hosts[name] = converged(hosts[name], result)
        if result["munge_key"] in ("create", "install", "fix"):
            hosts[name]["slurm"]["munge_key"] = {"exists": True, "type": "file", "sha1": "c" * 40, "mode": "0400",
                                                 "uid": 101}
        for service in result["start"] + result["restart"]:
            hosts[name]["slurm"]["daemons"][{"munge": "munged"}.get(service, service)] = True
    return plans


def test_a_cluster_converges_then_plans_nothing_and_follows_a_gpu_count_change(tmp_path):
    stopped = {"daemons": {"munged": True, "slurmd": False, "slurmctld": False}}
    hosts = {"ctl": probe(tmp_path, [], slurm=dict(stopped, hostname="ctl")),
             "n1": probe(tmp_path, TWO_MI250X, slurm=dict(stopped, hostname="n1")),
             "n2": probe(tmp_path, RX7900XTX, slurm=dict(stopped, hostname="n2"))}
    for name in ("n1", "n2"):
        hosts[name]["slurm"]["munge_key"] = {"exists": True, "type": "file", "sha1": "d" * 40, "mode": "0400",
                                             "uid": 101}
    first = run_cluster(hosts)
    assert first["ctl"]["munge_key"] == "create" and first["ctl"]["start"] == ["slurmctld"]
    assert first["n1"]["munge_key"] == "install" and first["n1"]["restart"] == ["munge"]
    assert first["n1"]["start"] == ["slurmd"] and not any(plan["reconfigure"] for plan in first.values())
    confs = set(plan["files"]["/etc/slurm/slurm.conf"] for plan in first.values())
    assert len(confs) == 1  # the same slurm.conf everywhere
    second = run_cluster(hosts)
    assert [plan["changes"] for plan in second.values()] == [[], [], []]
    # n2 gets a second RX 7900 XTX: its gres.conf and its count in slurm.conf change; slurmctld and n2's slurmd
    # restart, n1's slurmd re-reads slurm.conf on scontrol reconfigure.
    hosts["n2"]["gpu_pci"] = probe(tmp_path, RX7900XTX + [dict(RX7900XTX[0], path=[
        "pci0000:00", "0000:00:03.2", "0000:04:00.0"], drm=["card1", "renderD129"])])["gpu_pci"]
    third = run_cluster(hosts)
    assert sorted(third["n2"]["files"]) == ["/etc/slurm/gres.conf", "/etc/slurm/slurm.conf"]
    assert [third[name]["restart"] for name in ("ctl", "n1", "n2")] == [["slurmctld"], [], ["slurmd"]]
    assert [third[name]["reconfigure"] for name in ("ctl", "n1", "n2")] == [False, True, False]
    assert "Gres=gpu:rx7900xtx:2" in third["ctl"]["files"]["/etc/slurm/slurm.conf"]
    assert [plan["changes"] for plan in run_cluster(hosts).values()] == [[], [], []]


# --- the health check's lines and slurmd's drop-in (docs/health.md) -----------------------------------------------

HEALTH = {"health_check": True, "health_interval": 30, "health_node_state": "any"}


def test_the_health_check_lines_are_owned_lines_of_the_labs_slurm_conf(tmp_path):
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": LAB_CONF})
    result = cluster(node, record(node), **HEALTH)
    conf = result["files"]["/etc/slurm/slurm.conf"]
    lines = conf.splitlines()
    assert [line for line in lines if line.startswith("HealthCheck")] == [
        "HealthCheckInterval=30" + slurm_files.OWNED_LINE, "HealthCheckNodeState=ANY" + slurm_files.OWNED_LINE,
        "HealthCheckProgram=/usr/sbin/gpulab-slurm-health" + slurm_files.OWNED_LINE]
    assert lines.index("HealthCheckProgram=/usr/sbin/gpulab-slurm-health" + slurm_files.OWNED_LINE) < \
        lines.index("NodeName=gpu01 CPUs=4 Gres=mps:100,gpu:mi250x:2 State=UNKNOWN")
    # a lab's own interval is replaced by ours, marked; off again removes only our lines
    edited = conf.replace("HealthCheckInterval=30" + slurm_files.OWNED_LINE, "HealthCheckInterval=600")
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": edited})
    again = cluster(node, record(node), **HEALTH)["files"]["/etc/slurm/slurm.conf"]
    assert again == conf
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": conf})
    off = cluster(node, record(node), health_check=False)["files"]["/etc/slurm/slurm.conf"]
    assert "HealthCheck" not in off


def test_an_installed_slurm_gets_the_health_lines_and_slurmd_its_drop_in(tmp_path):
    node = probe(tmp_path, TWO_MI250X)
    node["paths"] = {plan_slurm.DROPIN_DIR: {"exists": False, "type": None},
                     plan_slurm.DROPIN: {"exists": False, "type": None},
                     "/run/systemd/system": {"exists": True, "type": "directory"}}
    result = cluster(node, record(node), install=True, **HEALTH)
    conf = result["files"]["/etc/slurm/slurm.conf"]
    assert "\nHealthCheckProgram=/usr/sbin/gpulab-slurm-health\nHealthCheckInterval=30\nHealthCheckNodeState=ANY\n" \
        in conf
    assert result["files"][plan_slurm.DROPIN] == plan_slurm.DROPIN_TEXT
    assert "ExecStartPre=-/usr/sbin/gpulab-gpu-health --wait-devices 60" in plan_slurm.DROPIN_TEXT
    assert result["dropin"] == {"folder": True, "reload": True}
    node["paths"][plan_slurm.DROPIN] = {"exists": True, "type": "file", "sha1": sha1(plan_slurm.DROPIN_TEXT)}
    assert plan_slurm.DROPIN not in cluster(node, record(node), install=True, **HEALTH)["files"]
    assert planner.probe_needs("slurm", {"sections": ["os", "slurm"]}, {"compute": True}, {})["paths"] == [
        plan_slurm.DROPIN_DIR, plan_slurm.DROPIN, "/run/systemd/system", slurm_files.HEALTH_PROGRAM,
        plan_slurm.PROLOG_PROGRAM]
    node["paths"][slurm_files.HEALTH_PROGRAM] = {"exists": False, "type": None}
    assert "/usr/sbin/gpulab-slurm-health is not installed on this node" in " ".join(
        cluster(node, record(node), install=True, **HEALTH)["notices"])


def test_the_prolog_lines_are_owned_and_add_to_the_labs_own_flags(tmp_path):
    lab = LAB_CONF.replace("GresTypes=mps", "PrologFlags=X11\nSchedulerParameters=bf_continue,defer\nGresTypes=mps")
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": lab})
    conf = cluster(node, record(node), health_prolog=True)["files"]["/etc/slurm/slurm.conf"]
    lines = conf.splitlines()
    # the lab's lines keep their words, ours are added; the Prolog line is owned, before the first node line
    assert "PrologFlags=X11,Alloc" in lines and "SchedulerParameters=bf_continue,defer,nohold_on_prolog_fail" in lines
    assert lines.index("Prolog=/usr/sbin/gpulab-slurm-prolog" + slurm_files.OWNED_LINE) < \
        lines.index("NodeName=gpu01 CPUs=4 Gres=mps:100,gpu:mi250x:2 State=UNKNOWN")
    # a second plan changes nothing; Contain implies Alloc
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": conf})
    assert "/etc/slurm/slurm.conf" not in cluster(node, record(node), health_prolog=True)["files"]
    assert plan_slurm.prolog_lines(["PrologFlags=Contain"], True)[0] == "PrologFlags=Contain"
    # off again: our owned line goes, the lab's lines stay (with the words added, said in docs/health.md)
    off = cluster(node, record(node), health_prolog=False)["files"]["/etc/slurm/slurm.conf"]
    assert "Prolog=" not in off and "PrologFlags=X11,Alloc" in off.splitlines()
    # without lines of the lab's own: three owned lines
    assert plan_slurm.prolog_lines(["NodeName=a"], True) == [
        "Prolog=/usr/sbin/gpulab-slurm-prolog" + slurm_files.OWNED_LINE, "PrologFlags=Alloc" + slurm_files.OWNED_LINE,
        "SchedulerParameters=nohold_on_prolog_fail" + slurm_files.OWNED_LINE, "NodeName=a"]


def test_an_installed_slurm_gets_the_prolog_lines_only_when_asked(tmp_path):
    node = probe(tmp_path, TWO_MI250X)
    conf = cluster(node, record(node), install=True, **HEALTH)["files"]["/etc/slurm/slurm.conf"]
    assert "Prolog" not in conf and "SchedulerParameters" not in conf
    on = cluster(node, record(node), install=True, health_prolog=True,
                 conf_extra={"SchedulerParameters": "bf_continue"}, **HEALTH)
    lines = on["files"]["/etc/slurm/slurm.conf"].splitlines()
    assert "SchedulerParameters=bf_continue,nohold_on_prolog_fail" in lines, lines
    assert "PrologFlags=Alloc" + slurm_files.OWNED_LINE in lines
    alone = cluster(node, record(node), install=True, health_prolog=True, health_check=False)
    assert "a node the prolog refuses stays drained" in " ".join(alone["notices"])
    node["paths"] = {plan_slurm.PROLOG_PROGRAM: {"exists": False, "type": None}}
    assert "/usr/sbin/gpulab-slurm-prolog is not installed on this node" in " ".join(
        cluster(node, record(node), install=True, health_prolog=True, **HEALTH)["notices"])


def test_a_labs_own_prolog_stops_the_plan_with_the_fix(tmp_path):
    node = probe(tmp_path, TWO_MI250X, files={"slurm.conf": "Prolog=/etc/slurm/prolog.d/*\n" + LAB_CONF})
    with pytest.raises(PlanError, match=r"line 1 sets Prolog=/etc/slurm/prolog.d/\*.*Call /usr/sbin/gpulab-slurm-"
                                        r"prolog from your prolog and set rocm_slurm_health_prolog: false"):
        cluster(node, record(node), health_prolog=True)
    # off, the lab's prolog is the lab's: kept as it is
    assert "Prolog=/etc/slurm/prolog.d/*" in cluster(node, record(node))["files"]["/etc/slurm/slurm.conf"]


@pytest.mark.parametrize("over, words", [
    ({"health_interval": 0}, "rocm_slurm_health_interval must be seconds"),
    ({"health_node_state": "SOMETIMES"}, "rocm_slurm_health_node_state must be one or more of ALLOC, ANY"),
])
def test_bad_health_values_are_refused(tmp_path, over, words):
    node = probe(tmp_path, TWO_MI250X)
    with pytest.raises(PlanError, match=words):
        cluster(node, record(node), **dict(HEALTH, **over))
