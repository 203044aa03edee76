"""rocm_partition's phase (plan_partition.py) and its cited table (gpu_partitions.py): an 8x MI300X node going
SPX+NPS1 -> CPX+NPS4 (8 -> 64 GPUs) and back, an unsupported pair refused before any change with the supported pairs
and the sources, and the dependent phases (Slurm GRES, the CDI spec, the health check's data) planned again for the
GPUs the profile gives.

The node: eight MI300X functions in a fixture sysfs tree, each with one KFD GPU node whose properties are the real
MI308X CPX capture (kfd-topology/mi308x-cpx-partition-node2-gpu-properties.txt) with the MI300X's device id, its own
location and render minor, and num_xcc 8 (SPX); amdgpu's current_compute_partition and current_memory_partition
files give the modes (the probe reads them, as the metrics writer does). One test gives amd-smi's facts instead, in
the parser's shape (partitions {'compute', 'memory'}: test_amd_smi_parser reads them from the real table capture's
Partition-Mode cell)."""

import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.amd_smi import parse_amd_smi
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci, parse_kfd_properties
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import (
    gpu_partitions as gp, plan_containers, plan_health, plan_metrics, plan_partition, plan_slurm_node, slurm_files,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.node import health
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.tests.unit import sysfs_tree
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.slurm_helpers import CPUS, NODE

FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures')
BUSES = ['05', '26', '46', '65', '85', 'a6', 'c6', 'e5']


def _kfd_properties(bus, minor):
    with open(os.path.join(FIXTURES, 'kfd-topology', 'mi308x-cpx-partition-node2-gpu-properties.txt')) as handle:
        props = parse_kfd_properties(handle.read())
    props.update(device_id=0x74a1, location_id=int(bus, 16) << 8, drm_render_minor=minor, num_xcc=8)
    return props


def mi300x_node(tmp_path, compute='SPX', memory='NPS1'):
    functions, kfd = [], []
    for index, bus in enumerate(BUSES):
        bdf = '0000:%s:00.0' % bus
        functions.append({"path": ["pci0000:00", "0000:00:01.%d" % index, bdf], "class": "0x120000",
                          "vendor": "0x1002", "device": "0x74a1", "revision": "0x00", "driver": "amdgpu",
                          "numa_node": 0 if index < 4 else 1, "drm": ["card%d" % index, "renderD%d" % (128 + index)],
                          "extra": {"current_compute_partition": compute, "current_memory_partition": memory}})
        kfd.append({"node": 2 + index, "properties": _kfd_properties(bus, 128 + index)})
    root = tmp_path / ('sys%d' % len(list(tmp_path.iterdir())))
    sysfs_tree.build(str(root), {"functions": functions, "files": CPUS, "kfd_nodes": kfd})
    pci = gather_pci(str(root), str(tmp_path), str(tmp_path))
    return {'sections': ['gpus', 'os', 'tools', 'slurm'], 'os': {'euid': 0}, 'gpu_pci': pci, 'slurm': {'topology': {}}}


def after_change(tmp_path, compute, memory):
    """What the plan predicts the re-probe after the change reads (test_a_re_probe_of_the_partitioned_tree holds the
    prediction to a probe of the 64-node tree)."""
    return gp.profile_view(mi300x_node(tmp_path), compute, memory)['node']


def test_the_table_cites_a_source_for_every_row_and_knows_the_mi300x_pairs():
    assert gp.model_of('0x74A1')['model'] == 'MI300X'
    assert gp.supported('0x74a1', 'CPX', 'NPS4') and gp.supported('0x74a1', 'DPX', 'NPS2')
    assert not gp.supported('0x74a1', 'SPX', 'NPS4') and not gp.supported('0x75a3', 'CPX', 'NPS4')
    assert gp.supported('0x75a3', 'QPX', 'NPS2') and gp.partitions_per_gpu('0x74a0', 'CPX') == 6
    for row in gp.MODELS.values():
        assert all(source.startswith('https://') for _c, _m, source in row['pairs'])
        assert all(pair[0] in row['partitions'] and pair[1] in gp.MEMORY_MODES for pair in row['pairs'])


def test_spx_nps1_to_cpx_nps4_goes_through_cpx_nps1(tmp_path):
    node = mi300x_node(tmp_path)
    # AMD's exporter as a unit file, our metrics timer as a masked unit (a link to /dev/null); no metrics service.
    node['paths'] = {'/usr/lib/systemd/system/amd-metrics-exporter.service': {'exists': True, 'type': 'file'},
                     '/etc/systemd/system/gpulab-metrics.timer': {'exists': True, 'type': 'symlink'},
                     '/etc/systemd/system/gpulab-metrics.service': {'exists': False, 'type': None}}
    result = plan_partition.plan(node, {'compute': 'CPX', 'memory': 'NPS4'}, {})
    assert result['gpus_before'] == 8 and result['gpus_after'] == 64
    assert result['memory'] == 'NPS4' and result['compute'] == 'CPX'
    assert result['reload'] == ['modprobe -r amdgpu', 'modprobe amdgpu']
    assert result['stop'] == ['amd-metrics-exporter', 'gpulab-metrics.timer']
    # SPX+NPS4 is no MI300X pair (AMD's guide): CPX first (CPX+NPS1 between), then NPS4 and the driver reload.
    assert result['order'] == ['compute', 'memory']
    assert [c['change'] for c in result['changes']] == [
        'stop amd-metrics-exporter, gpulab-metrics.timer',
        'amd-smi set --gpu all --compute-partition CPX',
        'amd-smi set --memory-partition NPS4, then modprobe -r amdgpu && modprobe amdgpu']
    assert 'SPX+NPS1 -> CPX+NPS4: ROCm shows 8 GPU(s) now, 64 after' in result['notices'][0]
    assert result['current'][0] == {'bdf': '0000:05:00.0', 'model': 'MI300X', 'compute': 'SPX', 'memory': 'NPS1'}


def test_amd_smi_gives_the_modes_where_sysfs_does_not(tmp_path):
    node = mi300x_node(tmp_path, compute=None, memory=None)
    with pytest.raises(PlanError) as error:
        plan_partition.plan(node, {'compute': 'CPX', 'memory': ''}, {})
    assert 'amd-smi reports no current memory partition' in str(error.value)
    # CPX: amd-smi lists each partition with its own function number; they fold into the GPU's.
    node['tools'] = {'amd_smi': {'gpus': [{'pcie_bus': '0000:%s:00.%d' % (bus, part),
                                           'partitions': {'compute': 'CPX', 'memory': 'NPS4'}}
                                          for bus in BUSES for part in range(8)]}}
    assert gp.current_modes(node)['0000:e5:00.0'] == ('CPX', 'NPS4') and len(gp.current_modes(node)) == 8
    assert plan_partition.plan(node, {'compute': 'CPX', 'memory': 'NPS4'}, {})['changes'] == []


def test_a_converged_node_and_an_empty_profile_change_nothing(tmp_path):
    node = after_change(tmp_path, 'CPX', 'NPS4')
    assert plan_partition.plan(node, {'compute': 'CPX', 'memory': 'NPS4'}, {})['changes'] == []
    assert plan_partition.plan(mi300x_node(tmp_path), {'compute': '', 'memory': ''}, {})['changes'] == []


def test_back_from_cpx_nps4_to_spx_nps1(tmp_path):
    node = after_change(tmp_path, 'CPX', 'NPS4')
    result = plan_partition.plan(node, {'compute': 'SPX', 'memory': 'NPS1'}, {})
    assert result['gpus_before'] == 64 and result['gpus_after'] == 8
    assert result['memory'] == 'NPS1' and result['compute'] == 'SPX'
    # The memory partition first: CPX+NPS1 between; SPX+NPS4 would be refused.
    assert result['order'] == ['memory', 'compute']
    assert result['changes'][0]['change'] == ('amd-smi set --memory-partition NPS1, then modprobe -r amdgpu && '
                                              'modprobe amdgpu')
    # Only the compute partition: no driver reload.
    only = plan_partition.plan(node, {'compute': 'CPX', 'memory': ''}, {})
    assert only['changes'] == [] and only['order'] == []
    dpx = plan_partition.plan(mi300x_node(tmp_path, 'SPX', 'NPS1'), {'compute': 'DPX', 'memory': ''}, {})
    assert dpx['order'] == ['compute'] and dpx['reload'] == [] and dpx['gpus_after'] == 16


def test_an_unsupported_pair_is_refused_with_the_supported_pairs_and_the_sources(tmp_path):
    with pytest.raises(PlanError) as error:
        plan_partition.plan(mi300x_node(tmp_path), {'compute': 'SPX', 'memory': 'NPS4'}, {})
    message = str(error.value)
    assert ('GPU 0000:05:00.0 (AMD Instinct MI300X): MI300X does not support SPX+NPS4; its documented pairs are '
            'SPX+NPS1, DPX+NPS1, DPX+NPS2, QPX+NPS1, QPX+NPS4, CPX+NPS1, CPX+NPS4 (sources: ' + gp.AMD_INDEX) in message
    assert gp.AMD_MI300X_QSG in message and len(error.value.problems) == 8
    with pytest.raises(PlanError) as error:
        plan_partition.plan(mi300x_node(tmp_path), {'compute': 'XPS', 'memory': ''}, {})
    assert 'rocm_partition_compute must be one of SPX, DPX, TPX, QPX, CPX' in str(error.value)
    # Only the memory mode, under SPX: SPX+NPS4 is no pair the MI300X supports.
    with pytest.raises(PlanError):
        plan_partition.plan(mi300x_node(tmp_path), {'compute': '', 'memory': 'NPS4'}, {})


def test_the_dependent_phases_plan_again_for_64_gpus_and_back(tmp_path):
    before = mi300x_node(tmp_path)
    cpx = after_change(tmp_path, 'CPX', 'NPS4')
    spx = after_change(tmp_path, 'SPX', 'NPS1')
    # Slurm GRES: one line per logical GPU, each its own render node.
    rec = plan_slurm_node.plan(cpx, dict(NODE), {})['node']
    assert rec['gres'] == 'gpu:mi300x:64'
    lines = slurm_files.gres_block(rec)
    assert len(lines) == 65 and 'File=/dev/dri/renderD191' in lines[-1]
    assert plan_slurm_node.plan(spx, dict(NODE), {})['node']['gres'] == 'gpu:mi300x:8'
    assert plan_slurm_node.plan(before, dict(NODE), {})['node']['gres'] == 'gpu:mi300x:8'
    # CDI: one device per KFD node.
    devices = dict(('/dev/dri/renderD%d' % minor, {'exists': True, 'type': 'char', 'major': 226, 'minor': minor})
                   for minor in range(128, 192))
    devices['/dev/kfd'] = {'exists': True, 'type': 'char'}
    gpus, warnings = plan_containers.listed_gpus(dict(cpx, containers={'devices': devices}))
    assert len(gpus) == 64 and warnings == [] and gpus[63]['render'] == '/dev/dri/renderD191'
    assert len(plan_containers.listed_gpus(dict(spx, containers={'devices': devices}))[0]) == 8
    # The health check's data: the GPUs on the bus stay 8; the KFD shows 64.
    assert gp.profile_view(before, 'CPX', 'NPS4')['count'] == 64
    assert cpx['gpu_pci']['kfd_gpu_nodes'] == 64 and cpx['gpu_pci']['amd_count'] == 8
    assert plan_health.gpu_count.expected(cpx, {})['count'] == 8
    # The health check compares the physical GPUs KFD lists with the bus: 8 and 8 in either profile.
    assert health.check_gpu_count(cpx['gpu_pci']['kfd_physical_gpus'], 8, 8)[0]['status'] == 'pass'
    # The metrics: 8 PCI functions, 64 KFD nodes expected after the change, 8 after the way back.
    wanted = {'expected_gpus': -1, 'textfile_dir': '/var/lib/t', 'rocm_path': '/opt/rocm', 'health_file': '/h'}
    assert [plan_metrics.writer_config(view, wanted, {})['expected_kfd'] for view in (before, cpx, spx)] == [8, 64, 8]
    assert plan_metrics.writer_config(cpx, wanted, {})['expected_pci'] == 8


def test_a_re_probe_of_the_partitioned_tree_counts_8_physical_gpus(tmp_path):
    # The KFD as the real CPX capture shows it: each partition counts up its GPU's function number.
    node = mi300x_node(tmp_path)
    root = tmp_path / 'cpx'
    functions = []
    kfd = []
    for index, bus in enumerate(BUSES):
        functions.append({"path": ["pci0000:00", "0000:00:01.%d" % index, '0000:%s:00.0' % bus], "class": "0x120000",
                          "vendor": "0x1002", "device": "0x74a1", "driver": "amdgpu", "numa_node": 0,
                          "drm": ["card%d" % index, "renderD%d" % (128 + index)],
                          "extra": {"current_compute_partition": "CPX", "current_memory_partition": "NPS4"}})
        for part in range(8):
            props = _kfd_properties(bus, 128 + index * 8 + part)
            props.update(location_id=(int(bus, 16) << 8) + part, num_xcc=1)
            kfd.append({"node": 2 + index * 8 + part, "properties": props})
    sysfs_tree.build(str(root), {"functions": functions, "files": CPUS, "kfd_nodes": kfd})
    pci = gather_pci(str(root), str(tmp_path), str(tmp_path))
    assert (pci['amd_count'], pci['kfd_gpu_nodes'], pci['kfd_physical_gpus']) == (8, 64, 8)
    probed = dict(node, gpu_pci=pci)
    assert plan_slurm_node.plan(probed, dict(NODE), {})['node']['gres'] == 'gpu:mi300x:64'
    predicted = gp.profile_view(node, 'CPX', 'NPS4')['node']['gpu_pci']
    assert [n['bdf'] for n in predicted['kfd_nodes']] == [n['bdf'] for n in pci['kfd_nodes']]
    assert [(d['compute_partition'], d['memory_partition']) for d in predicted['amd']] == \
        [(d['compute_partition'], d['memory_partition']) for d in pci['amd']] == [('CPX', 'NPS4')] * 8
    assert plan_partition.plan(probed, {'compute': 'CPX', 'memory': 'NPS4'}, {})['changes'] == []


def test_the_parser_reads_amd_s_documented_static_partition_output_of_a_cpx_nps4_node():
    # AMD's quick-start guide (fixtures/SOURCES.md): 64 logical GPUs, each CPX+NPS4; the fixture amd-smi prints it.
    name = 'static-partition-cpx-nps4-64-partitions-8x-mi300x-amd-guide.txt'
    with open(os.path.join(FIXTURES, 'amd-smi', name)) as handle:
        facts = parse_amd_smi(handle.read())
    assert facts['gpu_count'] == 64
    pairs = set((gpu['partitions']['compute'], gpu['partitions']['memory']) for gpu in facts['gpus'])
    assert pairs == {('CPX', 'NPS4')}


def test_a_node_where_slurmd_runs_changes_only_through_the_maintenance(tmp_path):
    node = dict(mi300x_node(tmp_path), slurm={'daemons': {'slurmd': True}, 'topology': {}})
    with pytest.raises(PlanError) as error:
        plan_partition.plan(node, {'compute': 'CPX', 'memory': 'NPS4'}, {})
    assert 'slurmd runs on this node' in str(error.value) and 'playbooks/upgrade.yml' in str(error.value)
    drained = plan_partition.plan(node, {'compute': 'CPX', 'memory': 'NPS4', 'drained': True}, {})
    assert drained['gpus_after'] == 64
    # Nothing to change: no refusal, drained or not.
    assert plan_partition.plan(node, {'compute': 'SPX', 'memory': 'NPS1'}, {})['changes'] == []


def test_processes_on_the_gpus_are_a_notice_first_and_refuse_the_change_once_the_units_stopped(tmp_path):
    node = mi300x_node(tmp_path)
    node['gpu_holders'] = {'processes': [{'pid': 4242, 'comm': 'python3', 'uid': 1000, 'devices': ['/dev/kfd']}],
                           'truncated': False}
    wanted = {'compute': 'CPX', 'memory': 'NPS4'}
    planned = plan_partition.plan(node, wanted, {})
    assert planned['holders'][0]['pid'] == 4242 and '1 process(es) hold the GPUs now (python3)' in planned['notices'][0]
    with pytest.raises(PlanError) as error:
        plan_partition.plan(node, dict(wanted, stopped=True), {})
    assert 'python3 (pid 4242, uid 1000) holds /dev/kfd' in str(error.value) and 'Device busy' in str(error.value)
    # The sections are read only where a profile is set: the processes, and where the holders' units or init scripts
    # are (a node without systemd: /etc/init.d).
    needs = plan_partition.probe_needs(node, wanted, {})
    assert needs['sections'] == ['gpu_holders', 'paths'] and '/etc/init.d/amd-metrics-exporter' in needs['paths']
    assert '/lib/systemd/system/gpulab-metrics.timer' in needs['paths'] and len(needs['paths']) == 4 + 1 + 4 + 4 + 1
    assert plan_partition.probe_needs(node, {'compute': '', 'memory': ''}, {}) is None
    node['paths'] = dict((path, {'exists': False}) for path in needs['paths'])
    node['paths']['/etc/init.d/amd-metrics-exporter'] = {'exists': True, 'type': 'file'}
    node['sections'] = ['gpu_holders', 'paths']
    assert plan_partition.probe_needs(node, wanted, {}) is None
    assert plan_partition.plan(node, wanted, {})['stop'] == ['amd-metrics-exporter']
    with pytest.raises(PlanError) as error:
        plan_partition.plan(node, dict(wanted, stopped=True), {})
    assert 'still hold the GPUs after amd-metrics-exporter stopped' in str(error.value)


def test_gpu_holders_reads_the_fd_links_of_proc(tmp_path):
    from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state
    proc = tmp_path / 'proc'
    for pid, comm, targets in ((10, 'amd-metrics-exporter', ['/dev/kfd', '/dev/dri/renderD128']),
                               (11, 'bash', ['/dev/pts/0']), (12, 'python3', ['/dev/dri/renderD130', '/tmp/x'])):
        (proc / str(pid) / 'fd').mkdir(parents=True)
        (proc / str(pid) / 'comm').write_text(comm + '\n')
        for number, target in enumerate(targets):
            os.symlink(target, str(proc / str(pid) / 'fd' / str(number)))
    (proc / 'self').mkdir()
    holders, truncated = node_state.gpu_holders(str(proc))
    assert [(h['pid'], h['comm'], h['devices']) for h in holders] == [
        (10, 'amd-metrics-exporter', ['/dev/dri/renderD128', '/dev/kfd']), (12, 'python3', ['/dev/dri/renderD130'])]
    assert truncated is False
    assert node_state.gpu_holders(str(proc), processes=1)[1] is True
