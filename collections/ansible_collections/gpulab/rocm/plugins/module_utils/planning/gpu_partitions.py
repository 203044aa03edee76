# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Which compute and memory partition modes each AMD Instinct GPU supports, and what a node looks like in a mode:
the cited table rocm_partition plans from (docs/hardware.md shows it), and the pure functions the dependent phases
use to plan for the GPUs a profile gives. Pure.

A compute partition mode splits one GPU's XCDs into logical GPUs: each is one KFD topology node (one rocminfo agent,
one render node) on the GPU's PCI function, so the PCI bus keeps showing the physical GPUs while the KFD shows
`partitions x GPUs` (an 8x MI300X node in CPX shows 64 GPUs to ROCm, 8 on the bus). A memory partition mode (NPS)
splits the HBM into NUMA domains; it needs as many compute partitions or more (NPS4 only with CPX on MI300X).

Sources (the URL of each row is in its 'sources'):
- AMD_INDEX: AMD's GPU partitioning documentation and its compatibility matrix (MI300X: SPX+NPS1, CPX+NPS4 from
  ROCm 6.4, CPX+NPS1 not marked; MI300A: SPX+NPS1, TPX+NPS1 from 6.3, CPX+NPS1 from 6.4; the live page adds a note on
  DPX+NPS2 bare metal). Its source: ROCm's amdgpu-docs, docs/gpu-partitioning/index.rst.
- AMD_MI300X_QSG: AMD's quick-start guide to partitioning MI300X (CPX/NPS4: 8 partitions per GPU, 48 GB each;
  SPX+NPS4 is invalid, "NPS4 is only compatible with CPX mode"; the outputs of amd-smi set and static --partition).
- AMDSMI_PARTITION: amd-smi's conceptual guide (MI300X has 8 XCDs, MI300A 6; a memory partition change needs a
  driver reload).
- KERNEL_DPX_NPS2: amdgpu "Add NPS2 to DPX compatible mode" (2025-03-26), for GC 9.4.x (MI300 series).
- KERNEL_950_NPS2: amdgpu 389d79a "Update supported modes for GC v9.5.0": CPX and QPX are also supported in NPS2.
- KERNEL_NO_DPX_6XCC: amdgpu "DPX is unsupported on GC 9.4.3/9.4.4/9.5.0 6-XCC parts" (MI300A has 6 XCCs).
- GIM_9_4_0: AMD's MxGPU (GIM) 9.4.0.K release note: MI355X/MI350X SPX-NPS1, DPX-NPS2, CPX-NPS2; MI300X SPX-NPS1,
  CPX-NPS4 (virtualised; the bare-metal modes are a superset).
- AAC: AMD Accelerator Cloud's bare-metal partitioning page: MI325X and MI355X SPX/DPX/QPX/CPX (1/2/4/8 logical
  GPUs per GPU); MI325X NPS1/NPS2/NPS4.
- AMDSMI_132: ROCm/amdsmi#132: `amd-smi partition --accelerator` and `amd-smi` of an 8x MI300X (amd-smi 26.0.2,
  ROCm 7.0.2): profiles SPX (NPS1), DPX (NPS1), QPX (NPS1,NPS4), and the node set to DPX/NPS1.
- ROCM_4439: ROCm/ROCm#4439: an 8x MI300X set to CPX under NPS1 (64 GPUs), then NPS4 (amd-smi 6.3.2).
- GALAPAGOS: a lab's MI300A admin page: SPX 1, TPX 3, CPX 6 GPUs per APU.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

AMD_INDEX = 'https://instinct.docs.amd.com/projects/amdgpu-docs/en/latest/gpu-partitioning/index.html'
AMD_MI300X_QSG = ('https://instinct.docs.amd.com/projects/amdgpu-docs/en/latest/gpu-partitioning/mi300x/'
                  'quick-start-guide.html')
AMDSMI_PARTITION = 'https://rocm.docs.amd.com/projects/amdsmi/en/latest/conceptual/partition.html'
KERNEL_DPX_NPS2 = 'https://git.zx2c4.com/wireguard-linux/log/drivers/gpu/drm/amd/amdgpu/aqua_vanjaram.c?showmsg=1'
KERNEL_950_NPS2 = 'https://github.com/gregkh/linux/commit/382928bd92fc'
KERNEL_NO_DPX_6XCC = 'https://www.mail-archive.com/amd-gfx@lists.freedesktop.org/msg149602.html'
GIM_9_4_0 = 'https://github.com/amd/MxGPU-Virtualization/releases/tag/9.4.0.K'
AAC = 'https://aac.amd.com/help/bare-metal/gpu-partitioning/'
ROCM_4439 = 'https://github.com/ROCm/ROCm/issues/4439'
AMDSMI_132 = 'https://github.com/ROCm/amdsmi/issues/132'
GALAPAGOS = 'https://galapagos.fluidnumerics.com/admin/mi300-change-compute-partition'

# Logical GPUs per physical GPU in each compute mode, for a GPU of 8 XCDs; MI300A (6 XCDs) has its own.
PARTITIONS_8XCD = {'SPX': 1, 'DPX': 2, 'QPX': 4, 'CPX': 8}
COMPUTE_MODES = ('SPX', 'DPX', 'TPX', 'QPX', 'CPX')
MEMORY_MODES = ('NPS1', 'NPS2', 'NPS4', 'NPS8')

# (compute, memory, the source that shows the pair on this GPU), in the order messages list them.
_MI300X_PAIRS = (
    ('SPX', 'NPS1', AMD_INDEX),           # the default; AMD's compatibility matrix
    ('DPX', 'NPS1', AMDSMI_132),          # amd-smi 26.0.2 set DPX under NPS1 on an 8x MI300X (DPX/NPS1 in its table)
    ('DPX', 'NPS2', KERNEL_DPX_NPS2),     # amdgpu: "Compute partition DPX is possible in NPS2 mode"; AMD's matrix
    ('QPX', 'NPS1', AMDSMI_132),          # amd-smi's accelerator profiles of that MI300X: QPX, NPS1,NPS4
    ('QPX', 'NPS4', AMDSMI_132),
    ('CPX', 'NPS1', ROCM_4439),           # CPX set under NPS1: 64 GPUs (amd-smi 6.3.2)
    ('CPX', 'NPS4', AMD_MI300X_QSG),      # AMD's quick-start guide: CPX/NPS4, 8 partitions of 48 GB per GPU
)
# MI350X/MI355X (GC 9.5.0): SPX-NPS1, DPX-NPS2 and CPX-NPS2 in AMD's GIM 9.4.0 table; CPX and QPX also in NPS2
# (amdgpu 389d79a). AMD Accelerator Cloud: the MI355X's NPS mode is fixed there (not user-configurable).
_MI350_PAIRS = (
    ('SPX', 'NPS1', GIM_9_4_0),
    ('DPX', 'NPS2', GIM_9_4_0),
    ('QPX', 'NPS2', KERNEL_950_NPS2),
    ('CPX', 'NPS2', GIM_9_4_0),
)

# One row per PCI device id (the ids of parsers/gfx.py, as gpu_support and the exporter use them). 'pairs': the
# (compute, memory) pairs a source shows, each with its source; a pair outside them is refused before any change.
# MI325X: AMD Accelerator Cloud documents SPX/DPX/QPX/CPX and NPS1/NPS2/NPS4 on it, not which pairs; it is the
# MI300X's chip (GC 9.4.x, aqua_vanjaram.c), so the MI300X's pairs are used, each citing the page.
# MI300A: 6 XCDs, SPX/TPX/CPX with NPS1 (AMD's matrix: TPX from ROCm 6.3, CPX from 6.4; 1/3/6 GPUs per APU, the
# lab's page; amdgpu leaves DPX out of 6-XCC parts). Not in the table: MI308X (no source names its pairs), MI350P
# (AMD's GIM 9.4.0 table shows SPX-NPS1 only, under SR-IOV; its PCI device id is not in parsers/gfx.py).
MODELS = {
    '0x74a1': {'model': 'MI300X', 'xcds': 8, 'partitions': PARTITIONS_8XCD, 'pairs': _MI300X_PAIRS},
    '0x74a5': {'model': 'MI325X', 'xcds': 8, 'partitions': PARTITIONS_8XCD,
               'pairs': tuple((c, m, AAC) for c, m, _source in _MI300X_PAIRS)},
    '0x74a0': {'model': 'MI300A', 'xcds': 6, 'partitions': {'SPX': 1, 'TPX': 3, 'CPX': 6},
               'pairs': (('SPX', 'NPS1', AMD_INDEX), ('TPX', 'NPS1', AMD_INDEX), ('CPX', 'NPS1', AMD_INDEX))},
    '0x75a0': {'model': 'MI350X', 'xcds': 8, 'partitions': PARTITIONS_8XCD, 'pairs': _MI350_PAIRS},
    '0x75a3': {'model': 'MI355X', 'xcds': 8, 'partitions': PARTITIONS_8XCD, 'pairs': _MI350_PAIRS},
}


def sources(row):
    """The row's sources, each once, in the order of its pairs."""
    seen = []
    for _compute, _memory, source in row['pairs']:
        if source not in seen:
            seen.append(source)
    return seen


def model_of(device_id):
    """The table's row for a PCI device id ('0x74a1'), or None: a GPU whose partition modes no source documents."""
    return MODELS.get(str(device_id or '').lower())


def pair_text(pair):
    return '%s+%s' % tuple(pair[:2])


def physical_gpus(node):
    """The AMD GPUs on the PCI bus (physical: a partitioned GPU is one function with several KFD nodes), in PCI
    order, each with its current modes where amd-smi or sysfs told them: [{'bdf', 'device_id', 'name', 'model',
    'compute', 'memory', 'kfd_nodes'}]."""
    pci = node.get('gpu_pci') or {}
    kfd = [item for item in pci.get('kfd_nodes') or [] if item.get('type') == 'gpu']
    modes = current_modes(node)
    gpus = []
    for device in sorted(pci.get('amd') or [], key=lambda item: item.get('bdf') or ''):
        row = model_of(device.get('device_id'))
        compute, memory = modes.get(device.get('bdf'), (None, None))
        gpus.append({'bdf': device.get('bdf'), 'device_id': device.get('device_id'), 'name': device.get('name'),
                     'model': row['model'] if row else None, 'compute': compute, 'memory': memory,
                     'kfd_nodes': len([item for item in kfd if same_gpu(item.get('bdf'), device.get('bdf'))])})
    return gpus


def same_gpu(kfd_bdf, device_bdf):
    """Whether a KFD node belongs to a PCI GPU: a compute partition's node counts up the function number of its GPU's
    address (kfd-topology/mi308x-cpx-partition-node3: location_id 0a:00.1 for the second partition of 0a:00.0)."""
    if not kfd_bdf or not device_bdf:
        return False
    return kfd_bdf == device_bdf or kfd_bdf.rsplit('.', 1)[0] == device_bdf.rsplit('.', 1)[0]


def current_modes(node):
    """{bdf: (compute, memory)}: what amdgpu reports in sysfs (the probe's gpu_pci, current_compute_partition and
    current_memory_partition), else what amd-smi reports (its static partition section, or the table's
    Partition-Mode cell); a partition's own amd-smi entry (a function other than .0 in CPX) is folded into its GPU's."""
    result = {}
    for gpu in ((node.get('tools') or {}).get('amd_smi') or {}).get('gpus') or []:
        parts = gpu.get('partitions') or {}
        bdf = gpu.get('pcie_bus')
        if not bdf or not (parts.get('compute') or parts.get('memory')):
            continue
        primary = bdf.rsplit('.', 1)[0] + '.0'
        result.setdefault(primary, (parts.get('compute'), parts.get('memory')))
    for device in (node.get('gpu_pci') or {}).get('amd') or []:
        if device.get('compute_partition') or device.get('memory_partition'):
            old = result.get(device.get('bdf'), (None, None))
            result[device.get('bdf')] = (device.get('compute_partition') or old[0],
                                         device.get('memory_partition') or old[1])
    return result


def partitions_per_gpu(device_id, compute):
    """Logical GPUs per physical GPU in a compute mode; None where the table does not know the GPU or the mode."""
    row = model_of(device_id)
    return (row['partitions'].get(compute) if row else None)


def supported(device_id, compute, memory):
    """Whether the table documents the pair for the GPU."""
    row = model_of(device_id)
    return bool(row) and (compute, memory) in [pair[:2] for pair in row['pairs']]


def profile_view(node, compute, memory):
    """What the node shows ROCm in a profile (compute, memory; empty for as it is now): the pure function the
    dependent phases (GRES, CDI, the health check's expectation, the metrics' expected GPUs) plan from.

    Returns {'physical' (GPUs on the bus), 'count' (logical GPUs: KFD nodes, rocminfo agents, Slurm GRES, CDI
    devices), 'gpus': [{'bdf', 'model', 'compute', 'memory', 'partition', 'kfd_node'}], 'node' (a copy of the probe
    whose gpu_pci lists the KFD nodes the profile gives: the dependent planners read it as they read a new probe)}.
    A GPU the table does not know keeps what it has."""
    pci = node.get('gpu_pci') or {}
    kfd = [item for item in pci.get('kfd_nodes') or [] if item.get('type') == 'gpu']
    others = [item for item in pci.get('kfd_nodes') or [] if item.get('type') != 'gpu']
    gpus, nodes = [], []
    number = max([item.get('node') or 0 for item in others] + [-1]) + 1
    minor = min([item.get('drm_render_minor') for item in kfd if item.get('drm_render_minor')] or [128])
    for gpu in physical_gpus(node):
        mode_c = compute or gpu['compute']
        mode_m = memory or gpu['memory']
        count = partitions_per_gpu(gpu['device_id'], mode_c)
        mine = [item for item in kfd if same_gpu(item.get('bdf'), gpu['bdf'])]
        template = dict(mine[0]) if mine else {'type': 'gpu', 'bdf': gpu['bdf']}
        if count is None:
            count = len(mine) or 1
        for index in range(count):
            bdf = '%s.%d' % (gpu['bdf'].rsplit('.', 1)[0], index)
            nodes.append(dict(template, node=number, drm_render_minor=minor, bdf=bdf))
            gpus.append({'bdf': bdf, 'gpu_bdf': gpu['bdf'], 'model': gpu['model'], 'compute': mode_c, 'memory': mode_m,
                         'partition': index, 'kfd_node': number, 'render_node': '/dev/dri/renderD%d' % minor})
            number += 1
            minor += 1
    modes = dict((gpu['gpu_bdf'], (gpu['compute'], gpu['memory'])) for gpu in gpus)
    amd = [dict(device, compute_partition=modes[device['bdf']][0], memory_partition=modes[device['bdf']][1])
           if device.get('bdf') in modes else device for device in pci.get('amd') or []]
    view = dict(node)
    view['gpu_pci'] = dict(pci, amd=amd, kfd_nodes=others + nodes, kfd_gpu_nodes=len(nodes),
                           kfd_physical_gpus=len(physical_gpus(node)))
    view.pop('tools', None)  # amd-smi's reading is of the node before the change
    return {'physical': len(physical_gpus(node)), 'count': len(gpus), 'gpus': gpus, 'node': view}
