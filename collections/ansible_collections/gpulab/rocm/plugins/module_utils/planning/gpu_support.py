# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Decisions that follow from the GPUs a host has: support per ROCm release, HSA overrides, MIOpen kdb packages,
and the ROCm/CUDA coexistence variables. Pure functions over gpu_pci facts; the roles call them through filters.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import gfx
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.rocm_release import is_core, parse_version

# gfx targets AMD's Linux ROCm supports natively: (first release, last release or None, note). From the
# reference, section 7 (AMD's system-requirements lists); releases before 5.3 are out of scope. The ROCm Core SDK
# (7.14 on) ships one package per target it supports, the fifteen of rocm_release.CORE_TARGETS (rocm-reference.md
# 13, the 10.0 install page): RDNA3's Navi32/33 and Phoenix and the RDNA3.5 APUs are native there only, and gfx906
# is not among them.
NATIVE = {
    'gfx900': ((5, 3, 0), (5, 7, 99), 'Vega 10 is unsupported from ROCm 6.0'),
    'gfx906': ((5, 3, 0), (7, 2, 99), 'deprecated in ROCm 6.x (MI50 end of support announced at 5.7); not among '
                                      'the ROCm Core SDK\'s targets'),
    'gfx908': ((5, 3, 0), None, None),
    'gfx90a': ((5, 3, 0), None, None),
    'gfx942': ((6, 0, 0), None, None),
    # MI350X/MI355X (CDNA4): from ROCm 7.0 (reference 7; the 7.0.0 compatibility matrix adds CDNA4).
    'gfx950': ((7, 0, 0), None, None),
    'gfx1030': ((5, 3, 0), None, None),
    'gfx1100': ((5, 7, 0), None, None),
    'gfx1101': ((7, 14, 0), None, None),
    'gfx1102': ((7, 14, 0), None, None),
    'gfx1103': ((7, 14, 0), None, None),
    'gfx1150': ((7, 14, 0), None, None),
    'gfx1151': ((7, 14, 0), None, None),
    'gfx1152': ((7, 14, 0), None, None),
    'gfx1153': ((7, 14, 0), None, None),
    'gfx1200': ((6, 4, 1), None, None),
    'gfx1201': ((6, 4, 1), None, None),
}

# MIOpen kdb packages carry a CU count in their name up to ROCm 5.6 (reference 4.4).
KDB_CUS = {'gfx900': [56, 64], 'gfx906': [60, 64], 'gfx908': [120], 'gfx90a': [104, 110], 'gfx1030': [36]}


def amd_gpus(gpu_pci):
    """The AMD GPUs of gpu_pci facts, one entry per KFD GPU node where the driver is loaded (a partitioned MI300
    has several), with the KFD's gfx target preferred over the id table's."""
    nodes = [node for node in (gpu_pci or {}).get('kfd_nodes') or [] if node.get('type') == 'gpu']
    gpus = []
    for dev in (gpu_pci or {}).get('amd') or []:
        mine = [node for node in nodes if node.get('bdf') == dev.get('bdf')]
        for node in mine or [None]:
            gpus.append({
                'bdf': dev.get('bdf'),
                'name': dev.get('name'),
                'device_id': dev.get('device_id'),
                'gfx_target': (node or {}).get('gfx_target') or dev.get('gfx_target'),
                'kfd_node': node.get('node') if node else None,
            })
    return gpus


def support(gfx_target, rocm_version):
    """{'gfx_target', 'status': native|override|unsupported, 'override', 'note'} for one GPU target."""
    target = (gfx_target or '').split(':', 1)[0].lower()
    version = parse_version(rocm_version)
    row = NATIVE.get(target)
    if row and row[0] <= version and (row[1] is None or version <= row[1]):
        return {'gfx_target': target, 'status': 'native', 'override': None, 'note': row[2]}
    override = gfx.hsa_override_for(target)
    if override:
        return {'gfx_target': target, 'status': 'override', 'override': override,
                'note': 'not supported natively; runs as %s through HSA_OVERRIDE_GFX_VERSION=%s'
                        % ('gfx' + override.replace('.', ''), override)}
    if row and row[1] is not None and version > row[1]:
        # Newer than its last release: name that release, so the admin can hold this node class there.
        last = '%d.%d.x' % row[1][:2]
        note = '%s; the last ROCm release that supports it is %s' % (row[2] or 'no longer supported', last)
    elif row:
        note = 'supported from ROCm %d.%d.%d%s' % (row[0] + ((' (%s)' % row[2]) if row[2] else '',))
    elif target:
        note = 'not in the ROCm %d.%d.%d support list and no known override' % version
    else:
        note = 'gfx target unknown (PCI device id not in the id table)'
    return {'gfx_target': target or None, 'status': 'unsupported', 'override': None, 'note': note}


def hsa_override_env(gpus, rocm_version):
    """HSA_OVERRIDE_GFX_VERSION variables for a host's AMD GPUs, and warnings.

    gpus: dicts with gfx_target and, where the driver is loaded, kfd_node (the KFD topology node id).
    One override for all GPUs when they all need the same one; the per-node form
    (HSA_OVERRIDE_GFX_VERSION_<node>, ROCm >= 6.2) when they differ, so a natively supported GPU keeps its ISA.
    """
    gpus = [_as_gpu(gpu) for gpu in gpus]
    decisions = [(gpu, support(gpu.get('gfx_target'), rocm_version)) for gpu in gpus]
    needing = [(gpu, dec) for gpu, dec in decisions if dec['status'] == 'override']
    if not needing:
        return {}, []
    values = set(dec['override'] for _gpu, dec in needing)
    if len(needing) == len(decisions) and len(values) == 1:
        return {'HSA_OVERRIDE_GFX_VERSION': values.pop()}, []
    if parse_version(rocm_version) < (6, 2, 0):
        return {}, ['GPUs of this host need different HSA overrides (%s), and the per-GPU form needs ROCm 6.2 or '
                    'later: none is set; use HIP_VISIBLE_DEVICES to pick GPUs of one kind'
                    % ', '.join(sorted(set(d['gfx_target'] for _gpu, d in decisions)))]
    nodes = [gpu.get('kfd_node') for gpu, _dec in needing]
    if any(node is None for node in nodes):
        return {}, ['GPUs of this host need different HSA overrides, which are set per KFD node; the KFD topology '
                    'is not readable yet (amdgpu not loaded): run again once the driver is loaded']
    return dict(('HSA_OVERRIDE_GFX_VERSION_%d' % int(gpu['kfd_node']), dec['override']) for gpu, dec in needing), []


def _as_gpu(gpu):
    """A GPU dict, or a bare gfx target string as {'gfx_target': ...}."""
    return {'gfx_target': gpu} if isinstance(gpu, str) else dict(gpu)


def effective_targets(gpus, rocm_version):
    """The gfx targets code must be built for: an overridden GPU runs the override's ISA (gfx1031 -> gfx1030)."""
    targets = set()
    for gpu in gpus:
        dec = support(_as_gpu(gpu).get('gfx_target'), rocm_version)
        if dec['status'] == 'override':
            major, minor, stepping = (int(part) for part in dec['override'].split('.'))
            targets.add('gfx%d%x%x' % (major, minor, stepping))
        elif dec['gfx_target']:
            targets.add(dec['gfx_target'])
    return sorted(targets)


def kdb_packages(gfx_targets, rocm_version):
    """MIOpen kernel-db package names for the targets, in the naming of the release's series; none for a ROCm Core
    SDK release, whose kernel databases ship in amdrocm-dnn<X.Y>-<target>, pulled by amdrocm<X.Y>-<target>."""
    version = parse_version(rocm_version)
    if is_core(version):
        return []
    names = []
    for target in sorted(set(t.split(':', 1)[0].lower() for t in gfx_targets if t)):
        if version >= (5, 7, 0):
            names.append('miopen-hip-%skdb' % target)
        else:
            pattern = 'miopenkernels-%s-%dkdb' if version <= (5, 4, 99) else 'miopen-hip-%s-%dkdb'
            names.extend(pattern % (target, cus) for cus in KDB_CUS.get(target, []))
    return names


def cuda_coexistence_env(policy, nvidia_present):
    """Variables for hosts that also have NVIDIA GPUs, by policy; nothing on hosts without them.

    rocm_only: CUDA_VISIBLE_DEVICES="" hides the NVIDIA GPUs from CUDA frameworks. HIP also reads
    CUDA_VISIBLE_DEVICES, but only when HIP_VISIBLE_DEVICES is unset and the value is non-empty (ROCclr), so an
    empty value leaves the AMD GPUs visible. both: CUDA untouched, HIP_PLATFORM=amd so hipcc never picks nvcc.
    """
    if policy not in ('rocm_only', 'both', 'none'):
        raise ValueError("CUDA coexistence policy %r is not one of rocm_only, both, none" % (policy,))
    if not nvidia_present or policy == 'none':
        return {}
    if policy == 'rocm_only':
        return {'CUDA_VISIBLE_DEVICES': '', 'HIP_PLATFORM': 'amd'}
    return {'HIP_PLATFORM': 'amd'}
