"""rocm_containers' planner (plan_containers.py) over a real probe with a fixture GPU tree: the CDI spec it writes
and when, the GPUs it leaves out, daemon.json merged by keys, Docker's restart, and what it refuses."""

import copy
import json
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_containers, planner, stack
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError, sha1
from ansible_collections.gpulab.rocm.tests.unit.sysfs_tree import build

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
CONVERGED = "bookworm-converged-rocm6.2.4-fixture-tools-mi250x.json"
H200 = "ubuntu24.04-h200-no-apt-lists-no-route.json"
SPEC = "/etc/cdi/amd.json"

# FIXTURE GPUs (the hardware scenario's mixed-navi21-navi23-kfd.json): an RX 6900 XT (gfx1030, native) at 67:00.0
# as KFD node 1 with card1/renderD128, an RX 6600 (gfx1032, runs as 10.3.0) at 0b:00.0 as node 2 with
# card2/renderD129.
RX6900XT = {"path": ["pci0000:60", "0000:60:01.1", "0000:67:00.0"], "class": "0x030000", "vendor": "0x1002",
            "device": "0x73bf", "driver": "amdgpu", "drm": ["card1", "renderD128"]}
RX6600 = {"path": ["pci0000:00", "0000:00:03.1", "0000:0b:00.0"], "class": "0x030000", "vendor": "0x1002",
          "device": "0x73ff", "driver": "amdgpu", "drm": ["card2", "renderD129"]}
CPU_NODE = {"node": 0, "properties": {"cpu_cores_count": 12, "simd_count": 0}}
NODE_6900 = {"node": 1, "properties": {"simd_count": 160, "simd_per_cu": 2, "vendor_id": 4098, "device_id": 29631,
                                       "location_id": 26368, "gfx_target_version": 100300, "drm_render_minor": 128}}
NODE_6600 = {"node": 2, "properties": {"simd_count": 56, "simd_per_cu": 2, "vendor_id": 4098, "device_id": 29695,
                                       "location_id": 2816, "gfx_target_version": 100302, "drm_render_minor": 129}}
WANTED = {"enabled": True, "engines": ["podman"], "podman_packages": ["podman", "uidmap", "passt"],
          "docker_packages": ["docker.io"], "cdi_spec": SPEC, "cdi_additional_gids": True,
          "hsa_override_enabled": True, "docker_cdi": True, "docker_restart_running": False, "check": True,
          "check_packages": ["busybox-static"], "check_users": [], "subid_count": 65536}


def probe(name):
    with open(os.path.join(FIXTURES, "probe", name)) as handle:
        return json.load(handle)


def inputs(**values):
    return stack.resolve(dict({"rocm_gpu_users": ["alice", "bob"]}, **values))


def char(minor, major=ns.DRM_MAJOR, gid=999):
    return {"exists": True, "type": "char", "major": major, "minor": minor, "mode": "0660", "uid": 0, "gid": gid}


def gpu_node(tmp_path, functions=(RX6900XT, RX6600), kfd=(CPU_NODE, NODE_6900, NODE_6600), devices=None):
    """The converged probe with a fixture sysfs tree read by the real reader, /dev nodes for it and Podman present."""
    sysfs = str(tmp_path / "sys")
    build(sysfs, {"functions": [dict(f, path=list(f["path"])) for f in functions], "kfd_nodes": list(kfd)})
    node = copy.deepcopy(probe(CONVERGED))
    node["gpu_pci"] = gather_pci(sysfs, str(tmp_path), str(tmp_path))
    node["packages"]["busybox-static"] = ["ii ", "1:1.37.0-6+b3"]
    if devices is None:
        devices = {"/dev/kfd": char(0, major=511), "/dev/dri/card1": char(1, gid=44),
                   "/dev/dri/card2": char(2, gid=44), "/dev/dri/renderD128": char(128),
                   "/dev/dri/renderD129": char(129)}
    node["containers"] = {
        "engines": {"podman": {"path": "/usr/bin/podman", "version": "5.4.2"}, "docker": {"path": None, "version": None}},
        "docker_daemon": {"running": False, "pid": None, "started_at": None, "containers_running": None,
                          "error": None},
        "daemon_json": {"exists": False, "type": None}, "docker_dir": {"exists": False, "type": None},
        "cdi_specs": {}, "cdi_dirs": {"/etc/cdi": {"exists": True, "type": "directory"},
                                      "/var/run/cdi": {"exists": False, "type": None}},
        "devices": devices, "busybox": {"exists": True, "type": "file"},
        "subids": {"/etc/subuid": [["alice", 100000, 65536], ["bob", 165536, 65536]],
                   "/etc/subgid": [["alice", 100000, 65536], ["bob", 165536, 65536]]},
        "local_users": ["alice", "bob"]}
    node["sections"] = sorted(set(node["sections"]) | {"containers"})
    return node


def converge(node, plan):
    """The node after the role applied the plan: its files as the probe would describe them."""
    for path, text in list(plan["spec"].items()) + list(plan["daemon_json"].items()):
        info = {"exists": True, "type": "file", "sha1": sha1(text), "content": text, "mode": "0644", "uid": 0,
                "gid": 0, "mtime": 100.0}
        if path == SPEC:
            info["kind"] = plan_containers.KIND
            node["containers"]["cdi_specs"][path] = info
        else:
            node["containers"]["daemon_json"] = info
    return node


def test_a_missing_check_user_is_left_out_quietly(tmp_path):
    # Issue 36: preflight alone says a GPU user does not exist (it stops the host at the gate).
    node = gpu_node(tmp_path)
    node["users"].pop("alice")
    plan = plan_containers.plan(node, dict(WANTED, check_users=["alice"]), inputs())
    assert plan["check"]["users"] == [] and not [n for n in plan["notices"] if "alice" in n]
    assert "alice" not in plan["subids"]


# --- the spec -----------------------------------------------------------------------------------------------------

def test_the_spec_names_each_gpu_by_index_and_all(tmp_path):
    plan = plan_containers.plan(gpu_node(tmp_path), WANTED, inputs())
    spec = json.loads(plan["spec"][SPEC])
    assert spec["cdiVersion"] == "0.7.0" and spec["kind"] == "amd.com/gpu"
    devices = dict((device["name"], [n["path"] for n in device["containerEdits"]["deviceNodes"]])
                   for device in spec["devices"])
    # KFD node order: index 0 is node 1 (the RX 6900 XT), index 1 node 2 (the RX 6600).
    assert devices == {"0": ["/dev/dri/renderD128", "/dev/dri/card1"], "1": ["/dev/dri/renderD129", "/dev/dri/card2"],
                       "all": ["/dev/dri/renderD128", "/dev/dri/card1", "/dev/dri/renderD129", "/dev/dri/card2"]}
    edits = spec["containerEdits"]
    assert edits["deviceNodes"] == [{"path": "/dev/kfd"}]
    assert edits["additionalGids"] == [44, 999]  # the probe's video and render groups
    # The RX 6600 needs 10.3.0 and the RX 6900 XT none: the per-node form, as rocm_env decides for login shells.
    assert edits["env"] == ["HSA_OVERRIDE_GFX_VERSION_2=10.3.0"]
    assert plan["changes"][0] == {"change": "write /etc/cdi/amd.json", "reason": "missing"}
    assert plan["check"]["cases"] == {
        "0": ["/dev/kfd", "/dev/dri/renderD128", "/dev/dri/card1"],
        "1": ["/dev/kfd", "/dev/dri/renderD129", "/dev/dri/card2"],
        "all": ["/dev/dri/card1", "/dev/dri/card2", "/dev/dri/renderD128", "/dev/dri/renderD129", "/dev/kfd"]}
    assert plan["check"]["engines"] == ["podman"] and plan["check"]["users"] == ["alice"]
    # Podman's containers must have the groups; Docker's are not held to them (Docker 26 drops them).
    assert plan["check"]["gids"] == {"podman": [44, 999], "docker": []}


def test_the_spec_is_written_once_and_again_when_the_gpus_change(tmp_path):
    node = gpu_node(tmp_path)
    plan = plan_containers.plan(node, WANTED, inputs())
    converge(node, plan)
    again = plan_containers.plan(node, WANTED, inputs())
    assert (again["changes"], again["spec"]) == ([], {})
    assert again["check"]["engines"] == ["podman"]  # the check still runs on a converged host
    # One GPU fewer: the spec is rewritten with one device.
    fewer = gpu_node(tmp_path / "one", functions=(RX6900XT,), kfd=(CPU_NODE, NODE_6900))
    fewer["containers"]["cdi_specs"] = node["containers"]["cdi_specs"]
    plan = plan_containers.plan(fewer, WANTED, inputs())
    assert plan["changes"] == [{"change": "write /etc/cdi/amd.json", "reason": "the GPUs or their settings changed"}]
    spec = json.loads(plan["spec"][SPEC])
    assert [device["name"] for device in spec["devices"]] == ["0", "all"]
    assert "env" not in spec["containerEdits"]  # the RX 6900 XT runs natively


def test_an_unbound_gpu_and_one_rocm_does_not_see_are_left_out_with_a_warning(tmp_path):
    unbound = dict(RX6600, driver=None)
    node = gpu_node(tmp_path, kfd=(CPU_NODE, NODE_6900), functions=(RX6900XT, unbound))
    plan = plan_containers.plan(node, WANTED, inputs())
    assert [gpu["bdf"] for gpu in plan["gpus"]] == ["0000:67:00.0"]
    assert plan["notices"] == ["0000:0b:00.0 (AMD Radeon RX 6600 / 6600 XT) is not bound to amdgpu (driver: none): "
                               "left out of the CDI spec"]
    no_kfd = gpu_node(tmp_path / "b", kfd=(CPU_NODE, NODE_6900))
    plan = plan_containers.plan(no_kfd, WANTED, inputs())
    assert [gpu["bdf"] for gpu in plan["gpus"]] == ["0000:67:00.0"]
    assert any("0000:0b:00.0" in n and "ROCm does not see it (no KFD node)" in n for n in plan["notices"])


def test_a_missing_render_node_or_kfd_leaves_the_gpu_out(tmp_path):
    node = gpu_node(tmp_path)
    del node["containers"]["devices"]["/dev/dri/renderD129"]
    plan = plan_containers.plan(node, WANTED, inputs())
    assert [gpu["render"] for gpu in plan["gpus"]] == ["/dev/dri/renderD128"]
    assert any("its render node /dev/dri/renderD129 is missing" in n for n in plan["notices"])
    # A file where the render node should be is not a device.
    node["containers"]["devices"]["/dev/dri/renderD129"] = {"exists": True, "type": "file"}
    assert len(plan_containers.plan(node, WANTED, inputs())["gpus"]) == 1
    # No /dev/kfd: no GPU is usable; a spec the role wrote before is removed.
    node = gpu_node(tmp_path / "b")
    converge(node, plan_containers.plan(node, WANTED, inputs()))
    del node["containers"]["devices"]["/dev/kfd"]
    plan = plan_containers.plan(node, WANTED, inputs())
    assert plan["gpus"] == [] and plan["spec_remove"] == [SPEC]
    assert any(n.startswith("/dev/kfd is missing") for n in plan["notices"])
    assert plan["check"]["engines"] == []


def test_without_additional_gids_the_spec_is_version_0_5_and_the_override_can_be_off(tmp_path):
    plan = plan_containers.plan(gpu_node(tmp_path), dict(WANTED, cdi_additional_gids=False,
                                                         hsa_override_enabled=False), inputs())
    spec = json.loads(plan["spec"][SPEC])
    assert spec["cdiVersion"] == "0.5.0" and spec["containerEdits"] == {"deviceNodes": [{"path": "/dev/kfd"}]}


def test_every_value_of_the_spec_is_validated():
    gpus = [{"index": 0, "render": "/dev/dri/renderD128", "card": None}]
    good = plan_containers.spec_document(gpus, [44], {"HSA_OVERRIDE_GFX_VERSION": "10.3.0"})
    plan_containers.spec_text(good)
    for bad in ({"render": "/dev/dri/renderD128 --privileged"}, {"card": "/etc/shadow"}):
        spec = plan_containers.spec_document([dict(gpus[0], **bad)], [44], {})
        with pytest.raises(PlanError, match="values the role does not write"):
            plan_containers.spec_text(spec)
    with pytest.raises(PlanError, match="gid 0"):
        plan_containers.spec_text(plan_containers.spec_document(gpus, [0], {}))
    with pytest.raises(PlanError, match="environment value"):
        plan_containers.spec_text(plan_containers.spec_document(gpus, [], {"LD_PRELOAD": "/tmp/x.so"}))


# --- engines, hosts without an AMD GPU ----------------------------------------------------------------------------

def test_a_missing_engine_and_busybox_are_installed_a_present_one_is_left(tmp_path):
    node = gpu_node(tmp_path)
    del node["packages"]["busybox-static"]
    node["containers"]["engines"]["podman"] = {"path": None, "version": None}
    plan = plan_containers.plan(node, dict(WANTED, engines=["podman", "docker"]), inputs())
    assert plan["install"] == ["podman", "uidmap", "passt", "docker.io", "busybox-static"]
    # Docker installed some other way (docker-ce) is left as it is: nothing of docker.io is installed.
    node["containers"]["engines"]["docker"] = {"path": "/usr/bin/docker", "version": "27.5.1"}
    assert "docker.io" not in plan_containers.plan(node, dict(WANTED, engines=["podman", "docker"]), inputs())["install"]


@pytest.mark.parametrize("distribution, version, packages", [
    ("Debian", "13", ["docker.io", "docker-cli"]),  # the client is a package of its own, only recommended
    ("Debian", "12", ["docker.io"]),
    ("Ubuntu", "24.04", ["docker.io"]),
])
def test_docker_comes_from_the_distributions_packages_unless_named(tmp_path, distribution, version, packages):
    node = gpu_node(tmp_path)
    node["os"].update(distribution=distribution, version=version)
    wanted = dict(WANTED, engines=["docker"], docker_packages=[])
    assert plan_containers.plan(node, wanted, inputs())["install"] == packages
    named = dict(wanted, docker_packages=["docker.io"])
    assert plan_containers.plan(node, named, inputs())["install"] == ["docker.io"]
    # Installed, but the client is not on the PATH (docker.io alone on Debian 13): said, not installed again.
    for name in packages:
        node["packages"][name] = ["ii ", "26.1.5+dfsg1-9"]
    plan = plan_containers.plan(node, wanted, inputs())
    assert plan["install"] == [] and any("docker is not on the PATH" in text for text in plan["notices"])


def test_a_host_with_no_amd_gpu_is_skipped_with_a_message_and_nothing_planned():
    node = probe(H200)  # the lent machine: one NVIDIA H200, no AMD GPU
    plan = planner.plan("containers", node, WANTED, inputs())
    assert plan["skip"] == "no AMD GPU on this host (1 NVIDIA GPU(s) only): rocm_containers changes nothing here"
    assert plan["notices"] == [plan["skip"]]
    assert (plan["changes"], plan["install"], plan["spec"], plan["check"]["engines"]) == ([], [], {}, [])
    # Nor is anything more read from it.
    assert plan_containers.probe_needs(node, WANTED, inputs()) is None


def test_a_disabled_role_plans_nothing_and_reads_nothing(tmp_path):
    node = gpu_node(tmp_path)
    plan = plan_containers.plan(node, dict(WANTED, enabled=False), inputs())
    assert (plan["skip"], plan["changes"], plan["notices"]) == ("rocm_containers_enabled is false", [], [])
    del node["containers"]
    node["sections"].remove("containers")
    assert plan_containers.probe_needs(node, dict(WANTED, enabled=False), inputs()) is None
    assert planner.probe_needs("containers", node, WANTED, inputs()) == {"sections": ["containers"]}


@pytest.mark.parametrize("wanted, message", [
    ({"engines": ["lxc"]}, "rocm_containers_engines must be a non-empty list of podman and docker"),
    ({"engines": []}, "rocm_containers_engines must be a non-empty list"),
    ({"podman_packages": ["podman", "-o=APT::Get::Trivial-Only"]}, "not Debian package names"),
    ({"cdi_spec": "/tmp/amd.json"}, "must be a .json file directly in /etc/cdi or /var/run/cdi"),
    ({"cdi_spec": "/etc/cdi/../shadow.json"}, "must be a .json file directly in"),
    ({"check_users": ["mallory"]}, "must be among the stack-wide rocm_gpu_users"),
    ({"check_users": ["alice; id"]}, "not user names"),
])
def test_invalid_values_are_refused_before_any_change(tmp_path, wanted, message):
    with pytest.raises(PlanError, match=message):
        plan_containers.plan(gpu_node(tmp_path), dict(WANTED, **wanted), inputs())


def test_another_spec_of_the_kind_stops_the_role(tmp_path):
    node = gpu_node(tmp_path)
    node["containers"]["cdi_specs"]["/var/run/cdi/amd-ctk.yaml"] = {"exists": True, "type": "file",
                                                                    "kind": "amd.com/gpu"}
    with pytest.raises(PlanError, match=r"another CDI spec declares amd.com/gpu: /var/run/cdi/amd-ctk.yaml"):
        plan_containers.plan(node, WANTED, inputs())


# --- Docker: daemon.json and the restart --------------------------------------------------------------------------

def docker_node(tmp_path, daemon_json=None, running=True, containers=0, started_at=200.0, version="26.1.5+dfsg1"):
    node = gpu_node(tmp_path)
    state = node["containers"]
    state["engines"]["docker"] = {"path": "/usr/bin/docker", "version": version}
    state["docker_dir"] = {"exists": True, "type": "directory"}
    state["docker_daemon"] = {"running": running, "pid": 42 if running else None,
                              "started_at": started_at if running else None,
                              "containers_running": containers if running else None, "error": None}
    if daemon_json is not None:
        state["daemon_json"] = {"exists": True, "type": "file", "content": daemon_json, "mode": "0600",
                                "sha1": sha1(daemon_json), "mtime": 100.0}
    return node


DOCKER = dict(WANTED, engines=["podman", "docker"])
LAB = '{\n  "data-root": "/scratch/docker",\n  "features": {"containerd-snapshotter": true},\n  "log-driver": "local"\n}\n'


def test_daemon_json_is_merged_by_keys_and_docker_restarted_once(tmp_path):
    node = docker_node(tmp_path, LAB)
    plan = plan_containers.plan(node, DOCKER, inputs())
    merged = json.loads(plan["daemon_json"][ns.DOCKER_DAEMON_JSON], object_pairs_hook=list)
    # The lab's keys stay, in their order; only features.cdi is added.
    assert merged == [("data-root", "/scratch/docker"),
                      ("features", [("containerd-snapshotter", True), ("cdi", True)]), ("log-driver", "local")]
    assert plan["daemon_json_mode"] == "0600"  # the lab's own mode stays
    assert plan["restart_docker"] is True
    assert {"change": "restart Docker", "reason": "/etc/docker/daemon.json changed"} in plan["changes"]
    assert plan["check"]["engines"] == ["podman", "docker"]
    # Written and restarted (dockerd started after the file): nothing more.
    converge(node, plan)
    node["containers"]["docker_daemon"]["started_at"] = 300.0
    again = plan_containers.plan(node, DOCKER, inputs())
    assert (again["changes"], again["restart_docker"], again["check"]["engines"]) == ([], False, ["podman", "docker"])


def test_docker_is_never_restarted_while_containers_run_unless_allowed(tmp_path):
    node = docker_node(tmp_path, LAB, containers=3)
    plan = plan_containers.plan(node, DOCKER, inputs())
    assert ns.DOCKER_DAEMON_JSON in plan["daemon_json"] and plan["restart_docker"] is False
    assert any("Docker is not restarted" in n and "3 container(s) are running" in n for n in plan["notices"])
    assert plan["check"]["engines"] == ["podman"]  # Docker does not read the spec yet
    # The next run, the file written but dockerd older than it: the restart is still due, and done once allowed.
    converge(node, plan)
    node["containers"]["daemon_json"]["mtime"] = 250.0
    later = plan_containers.plan(node, DOCKER, inputs())
    assert later["daemon_json"] == {} and later["restart_docker"] is False
    allowed = plan_containers.plan(node, dict(DOCKER, docker_restart_running=True), inputs())
    assert allowed["restart_docker"] is True
    assert "was changed after dockerd started" in allowed["changes"][0]["reason"]
    assert "3 running container(s) stop" in allowed["changes"][0]["reason"]
    # Nobody's containers: restarted.
    node["containers"]["docker_daemon"]["containers_running"] = 0
    assert plan_containers.plan(node, DOCKER, inputs())["restart_docker"] is True


def test_a_stopped_docker_gets_the_setting_without_a_restart(tmp_path):
    plan = plan_containers.plan(docker_node(tmp_path, None, running=False), DOCKER, inputs())
    assert json.loads(plan["daemon_json"][ns.DOCKER_DAEMON_JSON]) == {"features": {"cdi": True}}
    assert plan["restart_docker"] is False and plan["check"]["engines"] == ["podman"]


@pytest.mark.parametrize("text, message", [
    ('{"data-root": "/scratch",}', "is not valid JSON"),
    ('{"log-driver": "local", "log-driver": "json-file"}', "'log-driver' appear twice"),
    ('["features"]', "holds a JSON list, not an object"),
    ('{"features": "cdi"}', '"features" in /etc/docker/daemon.json is not an object'),
])
def test_a_daemon_json_that_cannot_be_merged_is_refused(tmp_path, text, message):
    # What was changed is the gate's to say (the plan pass refuses it before any change: the faults scenario).
    with pytest.raises(PlanError, match=message) as raised:
        plan_containers.plan(docker_node(tmp_path, text), DOCKER, inputs())
    assert "was changed" not in str(raised.value)


def test_a_linked_daemon_json_is_not_followed(tmp_path):
    node = docker_node(tmp_path)
    node["containers"]["daemon_json"] = {"exists": True, "type": "symlink", "target": "/home/alice/daemon.json"}
    with pytest.raises(PlanError, match="is a symlink, not a file: root does not follow"):
        plan_containers.plan(node, DOCKER, inputs())


def test_docker_before_25_is_left_alone(tmp_path):
    plan = plan_containers.plan(docker_node(tmp_path, LAB, version="20.10.24+dfsg1"), DOCKER, inputs())
    assert plan["daemon_json"] == {} and plan["restart_docker"] is False
    assert any(n.startswith("Docker 20.10.24+dfsg1 reads no CDI specs") for n in plan["notices"])


# --- the probe's readers ------------------------------------------------------------------------------------------

def test_engine_versions():
    assert ns.parse_engine_version("podman version 5.4.2\n") == "5.4.2"
    assert ns.parse_engine_version("Docker version 26.1.5+dfsg1, build a72d7cd\n") == "26.1.5+dfsg1"
    assert ns.parse_engine_version("garbage") is None


def test_cdi_specs_and_their_kind(tmp_path):
    cdi = tmp_path / "etc/cdi"
    cdi.mkdir(parents=True)
    (cdi / "amd.json").write_text('{\n  "cdiVersion": "0.7.0",\n  "kind": "amd.com/gpu",\n  "devices": []\n}\n')
    (cdi / "nvidia.yaml").write_text('---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\ndevices: []\n')
    (cdi / "README").write_text("not a spec")
    specs, folders = ns.cdi_specs(str(tmp_path))
    kinds = dict((path, info["kind"]) for path, info in specs.items())
    assert kinds == {"/etc/cdi/amd.json": "amd.com/gpu", "/etc/cdi/nvidia.yaml": "nvidia.com/gpu"}
    assert folders["/etc/cdi"]["type"] == "directory" and folders["/var/run/cdi"]["exists"] is False


def test_dockerd_is_found_by_its_pid_file_and_start_time(tmp_path):
    proc = tmp_path / "proc"
    (proc / "4242").mkdir(parents=True)
    (proc / "4242" / "comm").write_text("dockerd\n")
    # Field 22 (start time in clock ticks since boot), after the command in parentheses.
    (proc / "4242" / "stat").write_text("4242 (dockerd) S" + " 0" * 18 + " 500 0 0\n")
    (proc / "stat").write_text("cpu  1 2 3\nbtime 1700000000\n")
    (tmp_path / "run").mkdir()
    (tmp_path / "run" / "docker.pid").write_text("4242")
    daemon = ns.docker_daemon(str(tmp_path), str(proc))
    assert daemon["running"] and daemon["pid"] == 4242
    assert daemon["started_at"] == 1700000000 + 500.0 / os.sysconf("SC_CLK_TCK")
    (proc / "4242" / "comm").write_text("sleep\n")  # a stale pid file, its pid reused
    assert ns.docker_daemon(str(tmp_path), str(proc))["running"] is False


def test_device_nodes_are_described_without_following_links(tmp_path):
    (tmp_path / "dev" / "dri").mkdir(parents=True)
    os.symlink("/etc/shadow", str(tmp_path / "dev" / "kfd"))
    (tmp_path / "dev" / "dri" / "renderD128").write_text("")
    nodes = ns.gpu_device_nodes(str(tmp_path))
    assert nodes["/dev/kfd"]["type"] == "symlink" and nodes["/dev/dri/renderD128"]["type"] == "file"
    real = ns.device_node("/dev/null")
    assert (real["type"], real["major"], real["minor"]) == ("char", 1, 3)


# --- subordinate ids for rootless Podman --------------------------------------------------------------------------

def test_gpu_users_without_subordinate_ids_get_free_ranges(tmp_path):
    node = gpu_node(tmp_path)
    uid = str(node["users"]["bob"]["uid"])
    node["containers"]["subids"] = {"/etc/subuid": [["carol", 100000, 65536], [uid, 165536, 65536]],
                                    "/etc/subgid": [["carol", 100000, 65536], ["dave", 300000, 1000]]}
    node["containers"]["local_users"] = ["alice", "bob"]
    plan = plan_containers.plan(node, WANTED, inputs())
    # After every range of either file (dave's ends at 300999); bob (by uid) has subuids and lacks subgids only.
    assert plan["subids"] == [
        {"user": "alice", "subuids": "301000-366535", "subgids": "301000-366535",
         "argv": ["usermod", "--add-subuids", "301000-366535", "--add-subgids", "301000-366535", "--", "alice"]},
        {"user": "bob", "subuids": None, "subgids": "366536-432071",
         "argv": ["usermod", "--add-subgids", "366536-432071", "--", "bob"]}]
    assert {"change": "give alice subordinate ids 301000-366535",
            "reason": "rootless Podman maps the files of an image's other owners into them; /etc/subuid and "
                      "/etc/subgid have none for alice"} in plan["changes"]


def test_subordinate_ids_are_left_to_a_directory_service_or_off(tmp_path):
    node = gpu_node(tmp_path)
    node["containers"]["subids"] = {"/etc/subuid": [["alice", 100000, 65536]], "/etc/subgid": [["alice", 100000, 65536]]}
    node["containers"]["local_users"] = ["alice"]  # bob comes from LDAP
    plan = plan_containers.plan(node, WANTED, inputs())
    assert plan["subids"] == []
    assert any(n.startswith("user bob has no subordinate ids and is not in /etc/passwd") for n in plan["notices"])
    assert plan_containers.plan(node, dict(WANTED, subid_count=0), inputs())["subids"] == []
    with pytest.raises(PlanError, match="rocm_containers_subid_count must be a number"):
        plan_containers.plan(node, dict(WANTED, subid_count=-1), inputs())


def test_subordinate_id_files():
    assert ns.parse_subids("alice:100000:65536\n# comment\nbroken\n1001:165536:65536\n") == [
        ["alice", 100000, 65536], ["1001", 165536, 65536]]
