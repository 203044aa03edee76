"""The shared fixtures of the Slurm phases' tests (test_plan_slurm_node.py, test_plan_slurm.py): probes of fixture
sysfs trees with their Slurm files, and the node record of plan_slurm_node."""

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci, read_cpu_topology
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_slurm_node
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import sha1
from ansible_collections.gpulab.rocm.tests.unit import sysfs_tree


CPUS = {"devices/system/cpu/online": "0-3", "devices/system/node/node0/cpulist": "0-1",
        "devices/system/node/node1/cpulist": "2-3"}


for _cpu, (_socket, _core) in enumerate([(0, 0), (0, 1), (1, 0), (1, 1)]):
    CPUS["devices/system/cpu/cpu%d/topology/physical_package_id" % _cpu] = _socket
    CPUS["devices/system/cpu/cpu%d/topology/core_id" % _cpu] = _core


def mi250x(bus, render, numa):
    return {"path": ["pci0000:00", "0000:00:01.1", bus], "class": "0x038000", "vendor": "0x1002", "device": "0x740c",
            "revision": "0x01", "driver": "amdgpu", "numa_node": numa,
            "drm": ["card%d" % (render - 128), "renderD%d" % render]}


TWO_MI250X = [mi250x("0000:c1:00.0", 128, 0), mi250x("0000:d1:00.0", 129, 1)]


RX7900XTX = [{"path": ["pci0000:00", "0000:00:03.1", "0000:03:00.0"], "class": "0x030000", "vendor": "0x1002",
              "device": "0x744c", "revision": "0xc8", "driver": "amdgpu", "numa_node": -1,
              "drm": ["card0", "renderD128"]}]


def probe(tmp_path, functions, files=None, slurm=None, packages=None):
    """A node probe of a fixture sysfs tree: sections gpus and slurm (Slurm's files as given)."""
    root = tmp_path / ("sys%d" % len(list(tmp_path.iterdir())))
    sysfs_tree.build(str(root), {"functions": functions, "files": CPUS})
    described = dict((name, {"exists": True, "type": "file", "content": text, "sha1": sha1(text), "mode": "0644",
                             "uid": 0}) for name, text in (files or {}).items())
    state = {"conf_dir_state": {"exists": True, "type": "directory"}, "files": described,
             "munge_key": {"exists": False, "type": None}, "users": {"munge": {"uid": 101, "gid": 102}},
             "rsmi_plugin": False, "daemons": {"munged": True, "slurmd": True, "slurmctld": True},
             "hostname": "gpu01", "topology": read_cpu_topology(str(root))}
    state.update(slurm or {})
    return {"sections": ["gpus", "os", "packages", "slurm"], "os": {"euid": 0},
            "gpu_pci": gather_pci(str(root), str(tmp_path), str(tmp_path)), "slurm": state,
            "packages": packages or {}}


NODE = {"node_name": "gpu01", "node_addr": "", "node_port": 0, "gpu_types": {}, "gres_autodetect": "auto",
        "install": False, "controller": False, "compute": True}


def record(node, **over):
    return plan_slurm_node.plan(node, dict(NODE, **over), {})["node"]
