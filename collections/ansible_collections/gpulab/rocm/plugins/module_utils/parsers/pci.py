# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU facts from sysfs alone (no ROCm needed): PCI devices, their links, KFD topology, container hints.

No AnsibleModule here. The readers take a sysfs root, a filesystem root and a /proc root, so tests point them
at a tree built in a temporary directory; the text parsers (parse_link_speed, parse_kfd_properties) are pure.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import stat
import re

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import bdf_from_location, hex_id
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gfx import (
    VENDOR_AMD, VENDOR_NAMES, decode_gfx_target_version, lookup,
)

_BDF_DIR = re.compile(r'^[0-9a-f]{4,8}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]$')
_SPEED = re.compile(r'^\s*(\d+(?:\.\d+)?)\s*GT/s')
_CLASS_NAMES = {0x0300: 'VGA compatible controller', 0x0302: '3D controller', 0x0380: 'Display controller',
                0x1200: 'Processing accelerators'}
_CGROUP_HINTS = ('docker', 'kubepods', 'containerd', 'libpod', 'lxc', 'crio')
_KFD_LINK_TYPES = {2: 'pcie', 11: 'xgmi'}
_DRM_NODE = re.compile(r'^(card|renderD)\d{1,4}$')
_CPU_DIR = re.compile(r'^cpu(\d+)$')
_NODE_DIR = re.compile(r'^node(\d+)$')


def parse_link_speed(text):
    """GT/s from a sysfs link speed: '16.0 GT/s PCIe' -> 16.0, '2.5 GT/s' -> 2.5; 'Unknown' or '' -> None."""
    match = _SPEED.match(text or '')
    return float(match.group(1)) if match else None


def parse_pp_dpm_pcie(text):
    """amdgpu's PCIe DPM levels ('1: 16.0GT/s, x8 1143Mhz *'): (speed GT/s, width) of the level marked '*'.

    amdgpu reports the link it negotiated with the slot here, also behind an on-package switch.
    """
    for line in (text or '').splitlines():
        if line.rstrip().endswith('*'):
            match = re.search(r'(\d+(?:\.\d+)?)\s*GT/s,?\s*x(\d+)', line)
            if match:
                return float(match.group(1)), int(match.group(2))
    return None, None


def parse_kfd_properties(text):
    """KFD topology `properties` ('key value' per line, decimal, some 64-bit) -> {key: int}."""
    values = {}
    for line in (text or '').splitlines():
        parts = line.split()
        if len(parts) == 2:
            try:
                values[parts[0]] = int(parts[1])
            except ValueError:
                continue
    return values


# The most any one file of the node gives these readers (the largest seen, a KFD properties file, is a few KiB).
MAX_READ_BYTES = 1 << 20


def is_gpu_class(pci_class):
    """Display controllers (0x03xxxx) and processing accelerators (0x12xxxx) are the GPU classes."""
    return pci_class is not None and (pci_class >> 16) in (0x03, 0x12)


def _read(path, default=None):
    data = _read_bytes(path, None)
    if data is None:
        return default
    try:
        return data.decode('utf-8').strip()
    except UnicodeDecodeError:
        return default


def _read_int(path, base=0):
    text = _read(path)
    if text is None:
        return None
    try:
        return int(text, base)
    except ValueError:
        return None


def _link_of(device_dir):
    """The link a PCI function reports (its upstream link for endpoints and upstream ports)."""
    link = {
        'current_speed_gts': parse_link_speed(_read(os.path.join(device_dir, 'current_link_speed'))),
        'current_width': _read_int(os.path.join(device_dir, 'current_link_width'), 10),
        'max_speed_gts': parse_link_speed(_read(os.path.join(device_dir, 'max_link_speed'))),
        'max_width': _read_int(os.path.join(device_dir, 'max_link_width'), 10),
    }
    # Kernels print width 0 and speed 'Unknown' for functions without a link (VFs, some VMs).
    if not link['current_width']:
        link['current_width'] = None
    if not link['max_width']:
        link['max_width'] = None
    return link


def _degraded(link):
    if link['current_width'] is None and link['current_speed_gts'] is None:
        return None
    narrower = (link['current_width'] is not None and link['max_width'] is not None
                and link['current_width'] < link['max_width'])
    slower = (link['current_speed_gts'] is not None and link['max_speed_gts'] is not None
              and link['current_speed_gts'] < link['max_speed_gts'])
    return narrower or slower


def _bandwidth(link):
    if link['current_speed_gts'] is None or link['current_width'] is None:
        return None
    return link['current_speed_gts'] * link['current_width']


def link_facts(real_dir):
    """The device's own link, the slot link above an on-package switch, and whether the path is degraded.

    GPUs with an on-package PCIe switch (Vega 10, Navi 1x-4x, MI300) report the internal switch link on the GPU
    function (RX 9070 XT: 32 GT/s x16 always); the slot link is reported by the switch's upstream port (fixtures
    lspci/sysfs-tail-link-attrs-*: 16 GT/s x8 there). So every PCI function between the root port and the GPU is
    read; `upstream_*` is the topmost one (the slot link), and `degraded` is the state of the narrowest link on
    that path (lowest speed x width): a downtrained slot link counts, a downtrained internal link behind a narrower
    slot does not. `degraded_links` names every function whose link runs below its maximum.
    """
    own = _link_of(real_dir)
    dpm_speed, dpm_width = parse_pp_dpm_pcie(_read(os.path.join(real_dir, 'pp_dpm_pcie')))
    path = [(os.path.basename(real_dir), own)]
    parent = os.path.dirname(real_dir)
    while _BDF_DIR.match(os.path.basename(parent)):
        grand = os.path.dirname(parent)
        if not _BDF_DIR.match(os.path.basename(grand)):
            break  # parent is the root port: its link files describe the same link as the function below it
        path.append((os.path.basename(parent), _link_of(parent)))
        parent = grand
    facts = dict(own)
    upstream_bdf, upstream = path[-1] if len(path) > 1 else (None, None)
    facts['upstream_bdf'] = upstream_bdf
    for key in ('current_speed_gts', 'current_width', 'max_speed_gts', 'max_width'):
        facts['upstream_' + key] = upstream[key] if upstream else None
    measured = [(bdf, link) for bdf, link in path if _bandwidth(link) is not None]
    if measured:
        narrowest_bdf, narrowest = min(measured, key=lambda item: _bandwidth(item[1]))
        facts['effective_speed_gts'] = narrowest['current_speed_gts']
        facts['effective_width'] = narrowest['current_width']
        facts['narrowest_bdf'] = narrowest_bdf
        facts['degraded'] = _degraded(narrowest)
    else:
        facts.update(effective_speed_gts=None, effective_width=None, narrowest_bdf=None, degraded=None)
    facts['degraded_links'] = [bdf for bdf, link in path if _degraded(link)]
    facts['dpm_speed_gts'], facts['dpm_width'] = dpm_speed, dpm_width
    return facts


def read_pci_device(devices_dir, bdf):
    """Facts for one PCI function if it is an AMD or NVIDIA GPU, else None."""
    device_dir = os.path.join(devices_dir, bdf)
    pci_class = _read_int(os.path.join(device_dir, 'class'), 16)
    vendor_id = _read_int(os.path.join(device_dir, 'vendor'), 16)
    if not is_gpu_class(pci_class) or vendor_id not in VENDOR_NAMES:
        return None
    device_id = _read_int(os.path.join(device_dir, 'device'), 16)
    known = lookup(vendor_id, device_id)
    driver = os.path.join(device_dir, 'driver')
    numa = _read_int(os.path.join(device_dir, 'numa_node'), 10)
    real_dir = os.path.realpath(device_dir)
    is_vf = os.path.exists(os.path.join(device_dir, 'physfn'))
    drm = drm_nodes(device_dir)
    return {
        'bdf': bdf,
        'vendor': VENDOR_NAMES[vendor_id],
        'vendor_id': hex_id(vendor_id),
        'device_id': hex_id(device_id),
        'subsystem_vendor_id': hex_id(_read_int(os.path.join(device_dir, 'subsystem_vendor'), 16)),
        'subsystem_device_id': hex_id(_read_int(os.path.join(device_dir, 'subsystem_device'), 16)),
        'revision': hex_id(_read_int(os.path.join(device_dir, 'revision'), 16), 2),
        'class': '0x{0:06x}'.format(pci_class),
        'class_name': _CLASS_NAMES.get(pci_class >> 8),
        'name': known['name'],
        'gfx_target': known['gfx_target'],
        'family': known['family'],
        'sriov_vf': True if is_vf else known['vf'],
        'driver': os.path.basename(os.readlink(driver)) if os.path.islink(driver) else None,
        'numa_node': numa if numa is not None and numa >= 0 else None,
        'drm': drm,
        'render_node': render_node(drm),
        # amdgpu's partition modes on partitionable GPUs (MI300 series and later): SPX..CPX, NPS1..NPS8; null elsewhere.
        'compute_partition': _mode(os.path.join(device_dir, 'current_compute_partition')),
        'memory_partition': _mode(os.path.join(device_dir, 'current_memory_partition')),
        'link': link_facts(real_dir),
    }


def _mode(path):
    """A partition mode file's value ('CPX', 'NPS4'), or None where the file is absent or holds something else."""
    value = _read(path)
    return value if value and re.match(r'^(SPX|DPX|TPX|QPX|CPX|NPS[1-8])$', value) else None


def drm_nodes(device_dir):
    """The DRM nodes the driver made for a PCI function (its drm/ folder: card1, renderD128), sorted; [] when none."""
    names = [name for name in _listdir(os.path.join(device_dir, 'drm')) if _DRM_NODE.match(name)]
    return sorted(names, key=lambda name: (not name.startswith('card'), int(re.sub(r'\D', '', name))))


def render_node(drm):
    """The function's render node as /dev/dri/renderDN, from its DRM nodes (drm_nodes); None when it has none (no
    driver bound, or not a DRM device)."""
    renders = [name for name in drm if name.startswith('renderD')]
    return '/dev/dri/' + renders[0] if renders else None


def read_kfd_nodes(sysfs_root):
    """KFD topology nodes (/sys/class/kfd/kfd/topology/nodes), or None when there is no KFD."""
    nodes_dir = os.path.join(sysfs_root, 'class', 'kfd', 'kfd', 'topology', 'nodes')
    if not os.path.isdir(nodes_dir):
        return None
    nodes = []
    for entry in sorted(os.listdir(nodes_dir), key=lambda name: (not name.isdigit(), int(name) if name.isdigit()
                                                                 else 0, name)):
        node_dir = os.path.join(nodes_dir, entry)
        if not entry.isdigit() or not os.path.isdir(node_dir):
            continue
        banks = [parse_kfd_properties(_read(os.path.join(node_dir, 'mem_banks', bank, 'properties')))
                 for bank in _listdir(os.path.join(node_dir, 'mem_banks'))]
        links = [parse_kfd_properties(_read(os.path.join(node_dir, 'io_links', link, 'properties')))
                 for link in _listdir(os.path.join(node_dir, 'io_links'))]
        nodes.append(kfd_node(int(entry), parse_kfd_properties(_read(os.path.join(node_dir, 'properties'))),
                              gpu_id=_read_int(os.path.join(node_dir, 'gpu_id'), 10),
                              name=_read(os.path.join(node_dir, 'name')), mem_banks=banks, io_links=links))
    return nodes


def _listdir(path):
    try:
        return sorted(os.listdir(path), key=lambda name: int(name) if name.isdigit() else -1)
    except OSError:
        return []


def kfd_node(number, props, gpu_id=None, name=None, mem_banks=(), io_links=()):
    """One KFD node's facts from its parsed `properties` (plus gpu_id, name, mem_banks and io_links)."""
    simd_count = props.get('simd_count', 0)
    is_gpu = simd_count > 0
    version = props.get('gfx_target_version')
    gfx_target = decode_gfx_target_version(version)
    if is_gpu and gfx_target is None:
        # Old kernels have no gfx_target_version (fixture vega10-old-kernel-*): use the device id table.
        gfx_target = lookup(props.get('vendor_id'), props.get('device_id'))['gfx_target']
    memory = props.get('local_mem_size') or None
    if not memory:
        # Newer kernels report local_mem_size 0 and list the VRAM heaps as mem_banks (heap types 1 and 2).
        heaps = [bank.get('size_in_bytes', 0) for bank in mem_banks if bank.get('heap_type') in (1, 2)]
        memory = (sum(heaps) or None) if is_gpu else None
    simd_per_cu = props.get('simd_per_cu') or 0
    return {
        'node': number,
        'type': 'gpu' if is_gpu else 'cpu',
        'gpu_id': gpu_id or None,
        'name': name or None,
        'gfx_target_version': version if is_gpu else None,
        'gfx_target': gfx_target if is_gpu else None,
        'vendor_id': hex_id(props.get('vendor_id')) if is_gpu else None,
        'device_id': hex_id(props.get('device_id')) if is_gpu else None,
        'bdf': bdf_from_location(props.get('location_id'), props.get('domain', 0)) if is_gpu else None,
        'cpu_cores_count': props.get('cpu_cores_count'),
        'simd_count': simd_count,
        'simd_per_cu': simd_per_cu or None,
        'compute_units': simd_count // simd_per_cu if is_gpu and simd_per_cu else None,
        'wavefront_size': props.get('wave_front_size') or None,
        'max_engine_clk_mhz': props.get('max_engine_clk_fcompute') if is_gpu else
        props.get('max_engine_clk_ccompute'),
        'memory_bytes': memory,
        'drm_render_minor': props.get('drm_render_minor') if is_gpu else None,
        'hive_id': hex_id(props.get('hive_id'), 16) if props.get('hive_id') else None,
        'unique_id': hex_id(props.get('unique_id'), 16) if props.get('unique_id') else None,
        'num_xcc': props.get('num_xcc'),
        'io_links': [{'type': _KFD_LINK_TYPES.get(link.get('type'), link.get('type')),
                      'node_to': link.get('node_to'), 'weight': link.get('weight'),
                      'min_bandwidth_mbs': link.get('min_bandwidth'), 'max_bandwidth_mbs': link.get('max_bandwidth')}
                     for link in io_links if link],
    }


def detect_container(root='/', proc_root='/proc'):
    """(in_container, container_type, hints) from the files container engines leave behind."""
    hints = []
    kind = None
    if os.path.exists(os.path.join(root, '.dockerenv')):
        hints.append('/.dockerenv')
        kind = 'docker'
    if os.path.exists(os.path.join(root, 'run', '.containerenv')):
        hints.append('/run/.containerenv')
        kind = kind or 'podman'
    environ = _read_bytes(os.path.join(proc_root, '1', 'environ'))
    for item in environ.split(b'\0'):
        if item.startswith(b'container='):
            value = item.split(b'=', 1)[1].decode('utf-8', 'replace')
            hints.append('container={0} in /proc/1/environ'.format(value))
            kind = kind or value or 'unknown'
    cgroup = (_read(os.path.join(proc_root, '1', 'cgroup')) or '').lower()
    for word in _CGROUP_HINTS:
        if word in cgroup:
            hints.append('{0} in /proc/1/cgroup'.format(word))
            kind = kind or ('lxc' if word == 'lxc' else 'kubernetes' if word == 'kubepods' else word)
            break
    return bool(hints), kind, hints


def _read_bytes(path, default=b''):
    """At most MAX_READ_BYTES of a regular file (sysfs attributes, KFD properties, /proc/1/environ): never blocks on a
    FIFO (opened non-blocking) nor reads a device (a link to /dev/zero planted under a sysfs_root); default when it is
    absent, unreadable, not a regular file or longer than that."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NONBLOCK', 0))
    except OSError:
        return default
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return default
        chunks, size = [], 0
        while size <= MAX_READ_BYTES:
            chunk = os.read(fd, MAX_READ_BYTES + 1 - size)
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
    except OSError:
        return default
    finally:
        os.close(fd)
    return default if size > MAX_READ_BYTES else b''.join(chunks)


def gather_pci(sysfs_root='/sys', root='/', proc_root='/proc'):
    """Every AMD and NVIDIA GPU function, KFD nodes and container hints: the gpu_pci facts."""
    devices_dir = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
    if not os.path.isdir(devices_dir):
        raise IOError('{0} does not exist: sysfs is not mounted there (set sysfs_root to where it is).'.format(
            devices_dir))
    devices = []
    for bdf in sorted(os.listdir(devices_dir)):
        device = read_pci_device(devices_dir, bdf)
        if device:
            devices.append(device)
    amd = [device for device in devices if device['vendor_id'] == hex_id(VENDOR_AMD)]
    nvidia = [device for device in devices if device['vendor'] == 'NVIDIA']
    in_container, container_type, hints = detect_container(root, proc_root)
    kfd_nodes = read_kfd_nodes(sysfs_root)
    kfd_gpus = [node for node in kfd_nodes or [] if node['type'] == 'gpu']
    # MI300 compute partitions (CPX) make several KFD nodes per device: each counts up the function number of its
    # GPU's address (kfd-topology/mi308x-cpx-partition-node3: 0a:00.1 beside 0a:00.0), so the GPU is domain:bus:device.
    physical = set(node['bdf'].rsplit('.', 1)[0] if node['bdf'] else node['unique_id'] or node['node']
                   for node in kfd_gpus)
    return {
        'devices': devices,
        'amd': amd,
        'nvidia': nvidia,
        'amd_count': len(amd),
        'nvidia_count': len(nvidia),
        'nvidia_present': bool(nvidia),
        'gfx_targets': sorted(set(device['gfx_target'] for device in amd if device['gfx_target'])),
        'degraded': [device['bdf'] for device in devices if device['link']['degraded']],
        'unbound': [device['bdf'] for device in amd if device['driver'] is None],
        'in_container': in_container,
        'container_type': container_type,
        'container_hints': hints,
        'kfd_present': kfd_nodes is not None,
        'kfd_nodes': kfd_nodes or [],
        'kfd_gpu_nodes': len(kfd_gpus),
        'kfd_physical_gpus': len(physical),
        'kfd_gfx_targets': sorted(set(node['gfx_target'] for node in kfd_gpus if node['gfx_target'])),
    }


def parse_cpu_list(text):
    """A kernel CPU list ('0-3,8-11', '' for none) -> sorted ints; ValueError when it is not one."""
    cpus = set()
    for part in (text or '').strip().split(','):
        part = part.strip()
        if not part:
            continue
        first, _sep, last = part.partition('-')
        if not first.isdigit() or (last and not last.isdigit()):
            raise ValueError('not a CPU list: %r' % text)
        cpus.update(range(int(first), int(last or first) + 1))
    return sorted(cpus)


def read_cpu_topology(sysfs_root='/sys'):
    """The CPUs and NUMA nodes of the host, from devices/system/{cpu,node}: {'cpus': [{'cpu', 'socket', 'core'}],
    'numa_nodes': {'N': [cpu, ...]}} (string keys, as the facts travel as JSON); empty where sysfs shows nothing."""
    base = os.path.join(sysfs_root, 'devices', 'system')
    cpus = []
    for entry in _listdir(os.path.join(base, 'cpu')):
        match = _CPU_DIR.match(entry)
        if not match:
            continue
        topology = os.path.join(base, 'cpu', entry, 'topology')
        cpus.append({'cpu': int(match.group(1)),
                     'socket': _read_int(os.path.join(topology, 'physical_package_id'), 10),
                     'core': _read_int(os.path.join(topology, 'core_id'), 10)})
    online = _read(os.path.join(base, 'cpu', 'online'))
    if online is not None:
        try:
            wanted = set(parse_cpu_list(online))
            cpus = [cpu for cpu in cpus if cpu['cpu'] in wanted]
        except ValueError:
            pass
    numa = {}
    for entry in _listdir(os.path.join(base, 'node')):
        match = _NODE_DIR.match(entry)
        if match:
            try:
                numa[str(int(match.group(1)))] = parse_cpu_list(_read(os.path.join(base, 'node', entry, 'cpulist')) or '')
            except ValueError:
                continue
    return {'cpus': sorted(cpus, key=lambda cpu: cpu['cpu']), 'numa_nodes': numa}
