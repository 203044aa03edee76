"""rocm_slurm's node phase (plan_slurm_node.py) over probes of fixture sysfs trees: the GPUs as GRES from the
facts, the node's record, the packages a host lacks, and the node values it refuses."""

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf as sc
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_slurm_node, slurm_files
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.slurm_helpers import NODE, RX7900XTX, TWO_MI250X, probe, record


# --- the GPUs as GRES from the facts ------------------------------------------------------------------------------

def test_one_gres_line_per_gpu_with_type_render_node_and_the_cores_of_its_numa_node(tmp_path):
    rec = record(probe(tmp_path, TWO_MI250X))
    assert rec["gres"] == "gpu:mi250x:2"
    assert slurm_files.gres_block(rec) == [
        "AutoDetect=off",
        "Name=gpu Type=mi250x File=/dev/dri/renderD128 Flags=amd_gpu_env Cores=0-1  # 0000:c1:00.0",
        "Name=gpu Type=mi250x File=/dev/dri/renderD129 Flags=amd_gpu_env Cores=2-3  # 0000:d1:00.0"]
    assert rec["shape"] == {"cpus": 4, "sockets": 2, "cores_per_socket": 2, "threads_per_core": 1}


def test_the_type_comes_from_the_device_id_and_revision_and_can_be_renamed(tmp_path):
    assert record(probe(tmp_path, RX7900XTX))["gres"] == "gpu:rx7900xtx:1"
    assert record(probe(tmp_path, TWO_MI250X), gpu_types={"0x740C": "mi250"})["gres"] == "gpu:mi250:2"
    assert sc.gpu_type("0x744c", "0xcc") == "rx7900xt" and sc.gpu_type("0x744c", "0x01") == "navi31"
    assert sc.gpu_type("0x9999", None, "gfx1030") == "gfx1030" and sc.gpu_type("0x9999") == "amdgpu"
    assert all(sc.TYPE_RE.match(kind) for kind in list(sc.GPU_TYPES.values()) + list(sc.GPU_TYPES_BY_REVISION.values()))


def test_an_unknown_numa_node_gives_no_cores_and_a_gpu_without_render_node_is_left_out(tmp_path):
    no_drm = dict(TWO_MI250X[0], drm=[])
    result = plan_slurm_node.plan(probe(tmp_path, RX7900XTX + [no_drm]), NODE, {})
    assert [gpu["file"] for gpu in result["node"]["gpus"]] == ["/dev/dri/renderD128"]
    assert result["node"]["gpus"][0]["cores"] is None
    assert "GPU 0000:c1:00.0 (AMD Instinct MI250X / MI250) has no render node" in result["notices"][0]


def test_autodetect_rsmi_where_slurmd_has_the_plugin(tmp_path):
    node = probe(tmp_path, TWO_MI250X, slurm={"rsmi_plugin": True,
                                              "rsmi_library": "/usr/lib/x86_64-linux-gnu/librocm_smi64.so.1"})
    rec = record(node)
    assert rec["autodetect"] and rec["gres"] == "gpu:2"
    assert slurm_files.gres_block(rec)[-1] == "AutoDetect=rsmi"
    assert record(node, gres_autodetect="never")["gres"] == "gpu:mi250x:2"


def test_a_node_without_rocm_smi_s_library_gets_each_render_node_even_with_the_plugin(tmp_path):
    # A ROCm Core SDK node without rocm-smi-lib: Slurm's AutoDetect=rsmi would find no GPU (openhpc/ohpc#2057).
    rec = record(probe(tmp_path, TWO_MI250X, slurm={"rsmi_plugin": True, "rsmi_library": None}))
    assert not rec["autodetect"] and rec["gres"] == "gpu:mi250x:2"
    assert slurm_files.gres_block(rec) == [
        "AutoDetect=off",
        "Name=gpu Type=mi250x File=/dev/dri/renderD128 Flags=amd_gpu_env Cores=0-1  # 0000:c1:00.0",
        "Name=gpu Type=mi250x File=/dev/dri/renderD129 Flags=amd_gpu_env Cores=2-3  # 0000:d1:00.0"]


def test_the_packages_a_host_lacks(tmp_path):
    node = probe(tmp_path, [], packages={"munge": ["ii ", "0.5.15-2"]})
    result = plan_slurm_node.plan(node, dict(NODE, install=True, controller=True, compute=True), {})
    assert result["packages"] == ["slurmctld", "slurm-client", "slurmd"]
    assert plan_slurm_node.plan(node, NODE, {})["packages"] == []


@pytest.mark.parametrize("over, words", [
    ({"node_name": "gpu01 Gres=gpu:9"}, "rocm_slurm_node_name must be a Slurm node name"),
    ({"node_addr": "10.0.0.1 Port=1"}, "rocm_slurm_node_addr must be a host name or an IP address"),
    ({"node_port": 70000}, "rocm_slurm_node_port must be a TCP port"),
    ({"gpu_types": {"0x740c": "MI250 X"}}, "'MI250 X' for 0x740c is not a GRES type"),
    ({"gpu_types": {"mi250": "mi250"}}, "'mi250' is not a PCI device id"),
    ({"gres_autodetect": False}, "rocm_slurm_gres_autodetect must be auto or never"),
])
def test_bad_node_values_are_refused_before_any_change(tmp_path, over, words):
    with pytest.raises(PlanError) as failure:
        plan_slurm_node.plan(probe(tmp_path, TWO_MI250X), dict(NODE, **over), {})
    assert words in str(failure.value) and "Nothing was changed" in str(failure.value)
