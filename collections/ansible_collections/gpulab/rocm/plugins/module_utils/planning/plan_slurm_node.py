# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Phase slurm_node (role rocm_slurm): one host's Slurm record from its probe (its GPUs as GRES lines, its Slurm name,
address and CPUs, the packages it lacks, its munge key's checksum), for the slurm phase of every host. Every value
is checked here. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf as sc
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import slurm_files as sf
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.gpu_partitions import same_gpu
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'slurm_node',
    'role': 'rocm_slurm',
    'changes_host': True,
    'sections': ('os', 'packages', 'gpus', 'slurm'),
    'keys': {
        'packages': 'Slurm and munge packages to install on this host.',
        'node': "This host's Slurm record (its GPUs as GRES), for the slurm phase of every host.",
    },
}

CONTROLLER_PACKAGES = ['munge', 'slurmctld', 'slurm-client']
NODE_PACKAGES = ['munge', 'slurmd', 'slurm-client']


def check_node(wanted):
    problems = []
    name = wanted.get('node_name') or ''
    if not sc.NODE_NAME_RE.match(str(name)):
        problems.append('rocm_slurm_node_name must be a Slurm node name (letters, digits, "_", "." and "-"), got %r'
                        % (name,))
    addr = wanted.get('node_addr') or ''
    if addr and not sc.HOST_RE.match(str(addr)):
        problems.append('rocm_slurm_node_addr must be a host name or an IP address, got %r' % (addr,))
    port = wanted.get('node_port') or 0
    if not sf.is_port(port, zero=True):
        problems.append('rocm_slurm_node_port must be a TCP port (1-65535), or 0 for SlurmdPort, got %r' % (port,))
    types = wanted.get('gpu_types') or {}
    if not isinstance(types, dict):
        problems.append('rocm_slurm_gpu_types must be a dict of PCI device id (such as 0x740c) to a type name')
        types = {}
    for key, value in sorted(types.items(), key=lambda item: str(item[0])):
        if not sc.DEVICE_ID_RE.match(str(key).lower()):
            problems.append('rocm_slurm_gpu_types: %r is not a PCI device id such as 0x740c' % (key,))
        if not sc.TYPE_RE.match(str(value)):
            problems.append('rocm_slurm_gpu_types: %r for %s is not a GRES type (lower case letters, digits and '
                            '"_", starting with a letter, at most 32)' % (value, key))
    if wanted.get('gres_autodetect', 'auto') not in ('auto', 'never'):
        problems.append('rocm_slurm_gres_autodetect must be auto or never, got %r' % (wanted.get('gres_autodetect'),))
    return problems


def core_index(topology):
    """{cpu: Slurm core index}: cores numbered across sockets in (socket, core id) order, as Slurm numbers them in
    gres.conf's Cores=; None when sysfs does not give every CPU's socket and core."""
    cpus = (topology or {}).get('cpus') or []
    if not cpus or any(cpu.get('socket') is None or cpu.get('core') is None for cpu in cpus):
        return None
    cores = sorted(set((cpu['socket'], cpu['core']) for cpu in cpus))
    rank = dict((core, index) for index, core in enumerate(cores))
    return dict((cpu['cpu'], rank[(cpu['socket'], cpu['core'])]) for cpu in cpus)


def cpu_shape(topology):
    """{'cpus', 'sockets', 'cores_per_socket', 'threads_per_core'} of the host, or None where sysfs gives no CPUs."""
    cpus = (topology or {}).get('cpus') or []
    if not cpus:
        return None
    shape = {'cpus': len(cpus), 'sockets': None, 'cores_per_socket': None, 'threads_per_core': None}
    if core_index(topology) is None:
        return shape
    sockets = sorted(set(cpu['socket'] for cpu in cpus))
    per_socket = dict((socket, set(cpu['core'] for cpu in cpus if cpu['socket'] == socket)) for socket in sockets)
    counts = set(len(cores) for cores in per_socket.values())
    cores = sum(len(cores) for cores in per_socket.values())
    if len(counts) == 1 and len(cpus) % cores == 0:
        shape.update(sockets=len(sockets), cores_per_socket=counts.pop(), threads_per_core=len(cpus) // cores)
    return shape


def gpu_gres(node, wanted, result):
    """The GRES of one host's AMD GPUs: [{'bdf', 'type', 'file', 'cores', 'numa_node'}], in PCI order; a GPU with no
    render node is left out with a notice (Slurm hands out device files)."""
    pci = node.get('gpu_pci') or {}
    topology = (node.get('slurm') or {}).get('topology') or {}
    cores_of = core_index(topology)
    numa_cpus = topology.get('numa_nodes') or {}
    kfd = [item for item in pci.get('kfd_nodes') or [] if item.get('type') == 'gpu']
    overrides = dict((str(key).lower(), value) for key, value in (wanted.get('gpu_types') or {}).items())
    gpus = []
    for device in sorted(pci.get('amd') or [], key=lambda item: item.get('bdf') or ''):
        minors = [item.get('drm_render_minor') for item in kfd
                  if same_gpu(item.get('bdf'), device.get('bdf')) and item.get('drm_render_minor')]
        files = ['/dev/dri/renderD%d' % minor for minor in minors] or (
            [device['render_node']] if device.get('render_node') else [])
        if not files:
            result.warn('GPU %s (%s) has no render node (no driver bound?): Slurm is not given it'
                        % (device.get('bdf'), device.get('name') or device.get('device_id')))
            continue
        kind = sc.gpu_type(device.get('device_id'), device.get('revision'), device.get('gfx_target'), overrides)
        numa = device.get('numa_node')
        cores = None
        if numa is not None and cores_of is not None and numa_cpus.get(str(numa)):
            cores = sc.cpu_ranges(cores_of[cpu] for cpu in numa_cpus[str(numa)] if cpu in cores_of)
        elif numa is not None:
            result.warn('GPU %s is on NUMA node %s, whose CPUs sysfs does not list: no Cores= for it'
                        % (device.get('bdf'), numa))
        for path in files:
            if not sc.RENDER_RE.match(path):
                raise PlanError('rocm_slurm: GPU %s has the render node %r, which is not /dev/dri/renderDN. Nothing '
                                'was changed.' % (device.get('bdf'), path))
            gpus.append({'bdf': device.get('bdf'), 'type': kind, 'file': path, 'cores': cores, 'numa_node': numa})
    return gpus


def gres_string(gpus, typed=True):
    """slurm.conf's Gres= value: 'gpu:mi250x:2', 'gpu:mi250x:1,gpu:rx6600:1', 'gpu:2' (untyped), '' for none."""
    if not gpus:
        return ''
    if not typed:
        return 'gpu:%d' % len(gpus)
    counts = []
    for gpu in gpus:
        for item in counts:
            if item[0] == gpu['type']:
                item[1] += 1
                break
        else:
            counts.append([gpu['type'], 1])
    return ','.join('gpu:%s:%d' % (kind, count) for kind, count in counts)


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: node_name, node_addr, node_port, gpu_types, gres_autodetect, install, controller,
    compute. Returns the Plan with 'node' (this host's record for every host's slurm plan) and 'packages' (to
    install, with install true)."""
    result = Plan('slurm_node')
    problems = check_node(wanted)
    if problems:
        raise PlanError('rocm_slurm: %s. Nothing was changed.' % '; '.join(problems))
    slurm = node.get('slurm') or {}
    compute = sf.flag(wanted.get('compute'))
    gpus = gpu_gres(node, wanted, result) if compute else []
    # AutoDetect=rsmi needs slurmd's gpu_rsmi.so and ROCm SMI's library (librocm_smi64), which the ROCm Core SDK is
    # dropping (TheRock#6852); without either, each GPU's render node from sysfs, as with `never`.
    autodetect = (bool(gpus) and wanted.get('gres_autodetect', 'auto') == 'auto' and bool(slurm.get('rsmi_plugin'))
                  and bool(slurm.get('rsmi_library')))
    key = slurm.get('munge_key') or {}
    result['node'] = {
        'name': wanted['node_name'],
        'addr': wanted.get('node_addr') or '',
        'port': int(wanted.get('node_port') or 0),
        'hostname': slurm.get('hostname'),
        'compute': compute,
        'controller': sf.flag(wanted.get('controller')),
        'gpus': gpus,
        'autodetect': autodetect,
        'gres': gres_string(gpus, typed=not autodetect),
        'shape': cpu_shape(slurm.get('topology')),
        'munge_key_sha1': key.get('sha1') if key.get('type') == 'file' else None,
    }
    result['packages'] = []
    if sf.flag(wanted.get('install')):
        wanted_packages = list(CONTROLLER_PACKAGES if sf.flag(wanted.get('controller')) else [])
        wanted_packages += [name for name in (NODE_PACKAGES if compute else []) if name not in wanted_packages]
        installed = node.get('packages') or {}
        result['packages'] = [name for name in wanted_packages if ((installed.get(name) or ['  '])[0] + '  ')[1] != 'i']
        if result['packages']:
            result.change('install %s' % ', '.join(result['packages']), 'rocm_slurm_install is true and they are '
                          'missing')
    return result
