# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_slurm changes: the GPUs of each node as Slurm GRES (gres.conf), slurm.conf's GresTypes and each node's
Gres=, cgroup.conf's ConstrainDevices, and, for a lab without Slurm, Debian's slurmctld, slurmd and munge with one
munge key. Two phases:

- slurm_node: one host's record from its probe (its GPUs as GRES lines, its Slurm name, address and CPUs, the
  packages it lacks, its munge key's checksum). Changes nothing.
- slurm: the files, key, daemons and reconfiguration of one host, from its probe and every node's record.

Every value written is checked here; docs/slurm.md says which files and lines the role owns. Pure."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf as sc
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError, sha1

HEADER = '# Managed by gpulab.rocm (role rocm_slurm). Local changes are overwritten.\n'
BLOCK_BEGIN = '# BEGIN gpulab.rocm GPUs (role rocm_slurm)'
BLOCK_END = '# END gpulab.rocm GPUs (role rocm_slurm)'
OWNED_LINE = '  # gpulab.rocm (role rocm_slurm)'
DEFAULTS_FILE = '/etc/default/slurmd'
MUNGE_KEY = '/etc/munge/munge.key'
CONTROLLER_PACKAGES = ['munge', 'slurmctld', 'slurm-client']
NODE_PACKAGES = ['munge', 'slurmd', 'slurm-client']
# The health check (role rocm_health installs it on the compute nodes; docs/health.md).
HEALTH_PROGRAM = '/usr/sbin/gpulab-slurm-health'
HEALTH_NODE_STATES = ('ALLOC', 'ANY', 'CYCLE', 'IDLE', 'MIXED', 'NONDRAINED_IDLE')
# The same check as Slurm's Prolog (rocm_slurm_health_prolog): slurm.conf's Prolog is this program, PrologFlags
# holds Alloc (every node of an allocation checks before the job starts, not only the batch host) and
# SchedulerParameters holds nohold_on_prolog_fail (the refused job is requeued to run elsewhere, not held).
PROLOG_PROGRAM = '/usr/sbin/gpulab-slurm-prolog'
DROPIN_DIR = '/etc/systemd/system/slurmd.service.d'
DROPIN = DROPIN_DIR + '/gpulab-gpus.conf'
# slurmd must not register before amdgpu made /dev/kfd and the render nodes (gres.conf names them): wait up to a
# minute for them after boot, then start anyway (the health check drains a node whose GPUs did not come up).
DROPIN_TEXT = ('# Managed by gpulab.rocm (role rocm_slurm): slurmd waits for /dev/kfd and the GPUs\' render nodes.\n'
               '[Unit]\nAfter=systemd-modules-load.service systemd-udev-settle.service\n\n[Service]\n'
               'ExecStartPre=-/usr/sbin/gpulab-gpu-health --wait-devices 60\nTimeoutStartSec=180\n')
_CLUSTER_NAME_RE = re.compile(r'^[a-z0-9][a-z0-9_-]{0,39}\Z')
_PARTITION_RE = re.compile(r'^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}\Z')


# --- phase slurm_node ---------------------------------------------------------------------------------------------

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
    if not _is_port(port, zero=True):
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


def _flag(value):
    """A boolean of the wanted state (templated values can arrive as text on older Ansible)."""
    if isinstance(value, str):
        return value.strip().lower() in ('1', 'true', 'yes', 'on')
    return bool(value)


def _is_port(value, zero=False):
    if isinstance(value, bool):
        return False
    try:
        number = int(value)
    except (TypeError, ValueError):
        return False
    return (zero and number == 0) or 1 <= number <= 65535


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
                  if item.get('bdf') == device.get('bdf') and item.get('drm_render_minor')]
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


def node_record(node, wanted, stack=None):
    """Phase slurm_node. wanted: node_name, node_addr, node_port, gpu_types, gres_autodetect, install, controller,
    compute. Returns the Plan with 'node' (this host's record for every host's slurm plan) and 'packages' (to
    install, with install true)."""
    result = Plan('slurm_node')
    problems = check_node(wanted)
    if problems:
        raise PlanError('rocm_slurm: %s. Nothing was changed.' % '; '.join(problems))
    slurm = node.get('slurm') or {}
    compute = _flag(wanted.get('compute'))
    gpus = gpu_gres(node, wanted, result) if compute else []
    autodetect = bool(gpus) and wanted.get('gres_autodetect', 'auto') == 'auto' and bool(slurm.get('rsmi_plugin'))
    key = slurm.get('munge_key') or {}
    result['node'] = {
        'name': wanted['node_name'],
        'addr': wanted.get('node_addr') or '',
        'port': int(wanted.get('node_port') or 0),
        'hostname': slurm.get('hostname'),
        'compute': compute,
        'controller': _flag(wanted.get('controller')),
        'gpus': gpus,
        'autodetect': autodetect,
        'gres': gres_string(gpus, typed=not autodetect),
        'shape': cpu_shape(slurm.get('topology')),
        'munge_key_sha1': key.get('sha1') if key.get('type') == 'file' else None,
    }
    result['packages'] = []
    if _flag(wanted.get('install')):
        wanted_packages = list(CONTROLLER_PACKAGES if _flag(wanted.get('controller')) else [])
        wanted_packages += [name for name in (NODE_PACKAGES if compute else []) if name not in wanted_packages]
        installed = node.get('packages') or {}
        result['packages'] = [name for name in wanted_packages if ((installed.get(name) or ['  '])[0] + '  ')[1] != 'i']
        if result['packages']:
            result.change('install %s' % ', '.join(result['packages']), 'rocm_slurm_install is true and they are '
                          'missing')
    return result


# --- phase slurm --------------------------------------------------------------------------------------------------

def check_cluster(wanted):
    problems = []
    if not _CLUSTER_NAME_RE.match(str(wanted.get('cluster_name') or '')):
        problems.append('rocm_slurm_cluster_name must be lower case letters, digits, "_" and "-" (at most 40), got %r'
                        % (wanted.get('cluster_name'),))
    if not _PARTITION_RE.match(str(wanted.get('partition') or '')):
        problems.append('rocm_slurm_partition must be a partition name (letters, digits, "_", "." and "-"), got %r'
                        % (wanted.get('partition'),))
    for key in ('slurmctld_port', 'slurmd_port'):
        if not _is_port(wanted.get(key)):
            problems.append('rocm_slurm_%s must be a TCP port (1-65535), got %r' % (key, wanted.get(key)))
    if _flag(wanted.get('health_check')):
        if not _is_whole(wanted.get('health_interval'), 1):
            problems.append('rocm_slurm_health_interval must be seconds (1 or more), got %r'
                            % (wanted.get('health_interval'),))
        states = str(wanted.get('health_node_state') or '').upper().split(',')
        if not states or [state for state in states if state not in HEALTH_NODE_STATES]:
            problems.append('rocm_slurm_health_node_state must be one or more of %s (comma separated), got %r'
                            % (', '.join(HEALTH_NODE_STATES), wanted.get('health_node_state')))
    extra = wanted.get('conf_extra') or {}
    if not isinstance(extra, dict):
        problems.append('rocm_slurm_conf_extra must be a dict of slurm.conf key: value')
        extra = {}
    for key, value in sorted(extra.items(), key=lambda item: str(item[0])):
        if not sc.KEY_RE.match(str(key)) or str(key).lower() in _OWN_KEYS:
            problems.append('rocm_slurm_conf_extra: %r is not a slurm.conf key the role leaves to you (letters and '
                            'digits; not one of the keys it writes itself)' % (key,))
        if not sc.VALUE_RE.match(_text(value)):
            problems.append('rocm_slurm_conf_extra: the value of %s must be one word without "#" or quotes, got %r'
                            % (key, value))
    return problems


def _is_whole(value, least):
    if isinstance(value, bool):
        return False
    try:
        return int(value) >= least
    except (TypeError, ValueError):
        return False


def health_lines(wanted):
    """[(key, value)] of the health check's slurm.conf lines; [] where rocm_slurm_health_check is false."""
    if not _flag(wanted.get('health_check')):
        return []
    return [('HealthCheckProgram', HEALTH_PROGRAM), ('HealthCheckInterval', str(int(wanted['health_interval']))),
            ('HealthCheckNodeState', str(wanted['health_node_state']).upper())]


def prolog_lines(lines, on):
    """slurm.conf's lines with the prolog's settings (owned lines before the first NodeName line where new; Alloc
    and nohold_on_prolog_fail added to the lab's own PrologFlags and SchedulerParameters, their other words kept).
    Off: the owned lines removed (a word added to a lab's line stays). PlanError on a Prolog that is not ours: Slurm
    runs one Prolog, and the role does not replace the lab's."""
    out, seen, new = [], set(), []
    wanted = (('prolog', 'Prolog', [PROLOG_PROGRAM], None), ('prologflags', 'PrologFlags', ['Alloc'], 'contain'),
              ('schedulerparameters', 'SchedulerParameters', ['nohold_on_prolog_fail'], None))
    for index, line in enumerate(lines):
        words, comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        key = pairs[0][0].lower() if pairs else ''
        entry = [item for item in wanted if item[0] == key]
        if entry and not on:
            if comment.strip() == OWNED_LINE.strip():
                continue
        elif entry:
            seen.add(key)
            _key, name, (word,), implied = entry[0]
            items = [item for item in (pairs[0][1] or '').split(',') if item]
            if key == 'prolog' and items != [word]:
                raise PlanError('rocm_slurm: slurm.conf line %d sets Prolog=%s, and rocm_slurm_health_prolog needs '
                                'Prolog=%s: Slurm runs one Prolog (or a glob), and the role does not replace yours. '
                                'Call %s from your prolog and set rocm_slurm_health_prolog: false, or remove your '
                                'Prolog line. Nothing was changed.' % (index + 1, pairs[0][1], word, word))
            present = [item.lower() for item in items]
            if word.lower() not in present and implied not in present:
                line = ' '.join(['%s=%s' % (name, ','.join(items + [word]))] + words[1:]) + (
                    ' ' + comment if comment else '')
        out.append(line)
    if on:
        new = ['%s=%s%s' % (name, word, OWNED_LINE) for key, name, (word,), _implied in wanted if key not in seen]
    if new:
        at = next((index for index, line in enumerate(out)
                   if (sc.words_to_dict(sc.split_line(line)[0]) or [('', '')])[0][0].lower() == 'nodename'), len(out))
        out[at:at] = new
    return out


def probe_needs(node, wanted, stack):
    """On a compute node: slurmd's drop-in and whether systemd runs (it is reloaded after the drop-in changes)."""
    if not _flag(wanted.get('compute')):
        return None
    paths = [DROPIN_DIR, DROPIN, '/run/systemd/system', HEALTH_PROGRAM, PROLOG_PROGRAM]
    missing = [path for path in paths if path not in (node.get('paths') or {})]
    return {'sections': ['paths'], 'paths': missing} if missing else None


def _text(value):
    if isinstance(value, bool):
        return 'YES' if value else 'NO'
    return str(value)


def plan(node, wanted, stack=None):
    """Phase slurm. wanted: install, conf_dir, controller, compute, record (this host's slurm_node record), nodes
    ({host: record} of the compute nodes this run read), controller_record, cluster_name, partition,
    slurmctld_port, slurmd_port, cgroup_enforce, conf_extra, health_check, health_interval, health_node_state,
    health_prolog.

    Returns the Plan with files {path: content}, remove [paths], munge_key (create|install|None), start and restart
    ([services] in the order to act), reconfigure (bool: scontrol reconfigure on the controller afterwards)."""
    result = Plan('slurm')
    result.update(files={}, remove=[], munge_key=None, start=[], restart=[], reconfigure=False, dropin=None)
    problems = check_cluster(wanted)
    if problems:
        raise PlanError('rocm_slurm: %s. Nothing was changed.' % '; '.join(problems))
    slurm = node.get('slurm') or {}
    files = slurm.get('files') or {}
    conf_dir = (wanted.get('conf_dir') or '/etc/slurm').rstrip('/')
    install = _flag(wanted.get('install'))
    controller = _flag(wanted.get('controller'))
    compute = _flag(wanted.get('compute'))
    record = wanted.get('record') or {}
    ctl = wanted.get('controller_record') or {}
    nodes = wanted.get('nodes') or {}
    records = sorted((item for item in nodes.values() if item and item.get('compute')), key=lambda item: item['name'])
    names = [item['name'] for item in records]
    if len(set(names)) != len(names):
        raise PlanError('rocm_slurm: two hosts have the same Slurm node name (%s): set rocm_slurm_node_name. Nothing '
                        'was changed.' % ', '.join(sorted(set(name for name in names if names.count(name) > 1))))
    if len(wanted.get('controllers') or []) != 1:
        raise PlanError('rocm_slurm: the controller group (rocm_slurm_controller_group) must hold exactly one host, it '
                        'holds %s. Nothing was changed.' % (', '.join(wanted.get('controllers') or []) or 'none'))
    if not ctl:
        raise PlanError('rocm_slurm: the controller %s is not in this run (a --limit without it?): every host\'s plan '
                        'needs its record. Run with it. Nothing was changed.' % wanted['controllers'][0])
    restart = set()
    reconfigure = False
    # slurm.conf
    conf_path = conf_dir + '/slurm.conf'
    current = files.get('slurm.conf') or {}
    prolog = _flag(wanted.get('health_prolog'))
    if prolog and not health_lines(wanted):
        result.warn('rocm_slurm_health_prolog is on and rocm_slurm_health_check off: a node the prolog refuses stays '
                    'drained ("Prolog error") until an admin resumes it; the health check is what gives such a drain '
                    'its gpulab reason and resumes the node once healthy')
    if install:
        content = render_slurm_conf(wanted, ctl, records, current.get('content') or '')
        content = '\n'.join(prolog_lines(content.splitlines(), prolog)) + '\n'
    elif current.get('type') != 'file':
        if controller:
            raise PlanError('rocm_slurm: %s is missing on the controller, and rocm_slurm_install is false (configure '
                            'the Slurm that is there). Install Slurm first, or set rocm_slurm_install: true. Nothing '
                            'was changed.' % conf_path)
        result.warn('%s is missing on this node (configless Slurm?): slurm.conf is left to the controller' % conf_path)
        content = None
    else:
        content = edit_slurm_conf(current['content'], records, health_lines(wanted))
        content = '\n'.join(prolog_lines(content.splitlines(), prolog)) + '\n'
    if content is not None and current.get('content') != content:
        result['files'][conf_path] = content
        gpus_of = gres_changes(current.get('content') or '', content)
        mine = gpus_of is not None and record.get('name') in gpus_of
        # Slurm takes a node's new GPUs only when slurmctld and that node's slurmd start: on scontrol reconfigure,
        # Slurm 22.05 refuses another GPU count where gres.conf names the files ("Attempt to change gres/gpu Count
        # ... invalid with File configuration"), and slurm.conf(5) asks for both restarted on node changes.
        if controller:
            restart.add('slurmctld')
        if compute and (gpus_of is None or mine):
            restart.add('slurmd')
        elif compute:
            reconfigure = True
        if current.get('type') != 'file':
            why = 'missing'
        elif gpus_of is None:
            why = 'GresTypes, the node definitions or other settings differ (slurmctld and slurmd restart)'
        else:
            parts = ["slurmctld restarts: it takes a node's new GPUs only at its start"] if controller else []
            if compute:
                parts.append('slurmd restarts: its own node line changed' if mine else
                             'this slurmd re-reads it on scontrol reconfigure, no restart')
            why = 'the GPUs of %s differ (%s)' % (', '.join(gpus_of), '; '.join(parts))
        result.change('write %s' % conf_path, why)
    # gres.conf, on compute nodes
    if compute:
        path = conf_dir + '/gres.conf'
        gres = files.get('gres.conf') or {}
        text, removed = edit_gres_conf(gres.get('content') if gres.get('type') == 'file' else None, record, path)
        if removed or (text is not None and text != gres.get('content')):
            if removed:
                result['remove'].append(path)
                result.change('remove %s' % path, 'it held only the GPU block, and this node has no GPU now '
                              '(slurmd restarts)')
            else:
                result['files'][path] = text
                result.change('write %s' % path, '%s (slurmd restarts)' % (
                    'missing' if gres.get('type') != 'file' else 'the GPUs differ'))
            restart.add('slurmd')
        # cgroup.conf: ConstrainDevices
        path = conf_dir + '/cgroup.conf'
        cgroup = files.get('cgroup.conf') or {}
        text = (render_cgroup_conf() if install else
                edit_cgroup_conf(cgroup.get('content') if cgroup.get('type') == 'file' else ''))
        if text != cgroup.get('content'):
            result['files'][path] = text
            result.change('write %s' % path, 'ConstrainDevices=yes is %s' % (
                'missing' if 'ConstrainDevices' not in (cgroup.get('content') or '') else 'not set'))
            restart.add('slurmd')
        # slurmd waits for the GPUs' device nodes after boot (systemd drop-in), where the health check runs
        paths = node.get('paths') or {}
        if health_lines(wanted):
            if HEALTH_PROGRAM in paths and (paths[HEALTH_PROGRAM] or {}).get('type') != 'file':
                result.warn('%s is not installed on this node: slurmd\'s HealthCheckProgram fails here until role '
                            'rocm_health runs on it (playbooks/provision.yml)' % HEALTH_PROGRAM)
            if (paths.get(DROPIN) or {}).get('sha1') != sha1(DROPIN_TEXT):
                result['files'][DROPIN] = DROPIN_TEXT
                result['dropin'] = {'folder': (paths.get(DROPIN_DIR) or {}).get('type') != 'directory',
                                    'reload': (paths.get('/run/systemd/system') or {}).get('type') == 'directory'}
                result.change('write %s' % DROPIN, 'slurmd waits for /dev/kfd and the render nodes after boot '
                              '(takes effect at its next start)')
        elif (paths.get(DROPIN) or {}).get('type') == 'file':
            result['remove'].append(DROPIN)
            result.change('remove %s' % DROPIN, 'rocm_slurm_health_check is false')
        if prolog and PROLOG_PROGRAM in paths and (paths[PROLOG_PROGRAM] or {}).get('type') != 'file':
            result.warn('%s is not installed on this node: slurm.conf names it as the Prolog, so Slurm refuses every '
                        'job here and drains the node ("Prolog error") until role rocm_health runs on it '
                        '(playbooks/provision.yml)' % PROLOG_PROGRAM)
        # /etc/default/slurmd: the node's Slurm name, where it is not the host name
        if install:
            defaults = files.get('defaults') or {}
            text = edit_slurmd_defaults(defaults.get('content') if defaults.get('type') == 'file' else None,
                                        record.get('name'), slurm.get('hostname'))
            if text is not None and text != defaults.get('content'):
                result['files'][DEFAULTS_FILE] = text
                result.change('write %s' % DEFAULTS_FILE, 'slurmd must run as node %s (the host is %s)'
                              % (record.get('name'), slurm.get('hostname')))
                restart.add('slurmd')

    # The munge key (install only: an existing Slurm has its own): made once on the controller, the same bytes on
    # every other host. Its content never passes through the plan, only its checksum.
    key = slurm.get('munge_key') or {}
    munge = (slurm.get('users') or {}).get('munge') or {}
    if install:
        if key.get('type') not in (None, 'file'):
            raise PlanError('rocm_slurm: %s is a %s, not a file: root does not follow or replace it. Make it the '
                            'key file (or remove it). Nothing was changed.' % (MUNGE_KEY, key.get('type')))
        ctl_sha1 = ctl.get('munge_key_sha1')
        if controller and key.get('type') != 'file':
            result['munge_key'] = 'create'
            result.change('create the munge key %s' % MUNGE_KEY, 'the controller has none')
        elif not controller and (key.get('type') != 'file' or key.get('sha1') != ctl_sha1):
            result['munge_key'] = 'install'
            result.change("install the controller's munge key", 'missing' if key.get('type') != 'file' else
                          "it differs from the controller's")
        elif munge and (key.get('mode') != '0400' or key.get('uid') != munge.get('uid')):
            result['munge_key'] = 'fix'
            result.change('make %s mode 0400, owned by munge' % MUNGE_KEY, 'it is mode %s, uid %s'
                          % (key.get('mode'), key.get('uid')))
        if result['munge_key']:
            restart.add('munge')

    # Daemons: restarted when their files changed; started (install) where they do not run.
    daemons = slurm.get('daemons') or {}
    services = [('munge', 'munged', True), ('slurmctld', 'slurmctld', controller), ('slurmd', 'slurmd', compute)]
    for service, process, wanted_here in services:
        if not wanted_here:
            continue
        if not daemons.get(process):
            if install:
                result['start'].append(service)
                result.change('start %s' % service, 'it does not run')
            elif service in restart:
                result.warn('%s does not run here: the new configuration takes effect when it starts' % service)
        elif service in restart:
            result['restart'].append(service)
            result.change('restart %s' % service, 'its configuration changed')
    # A daemon (re)started here reads everything anew; a slurmd whose slurm.conf changed only in another node's
    # GPUs re-reads it on scontrol reconfigure (once, on the controller, after every restart).
    result['reconfigure'] = reconfigure and 'slurmd' not in result['restart'] + result['start']
    if result['reconfigure']:
        result.change('scontrol reconfigure (on the controller)', "another node's GPUs changed: this slurmd re-reads "
                      'slurm.conf without a restart')
    return result


# --- slurm.conf ---------------------------------------------------------------------------------------------------

# Keys the role writes itself in a whole slurm.conf (rocm_slurm_conf_extra may not set them).
_OWN_KEYS = ('clustername', 'slurmctldhost', 'slurmctldport', 'slurmdport', 'slurmuser', 'authtype', 'gres',
             'grestypes', 'nodename', 'partitionname', 'proctracktype', 'taskplugin', 'statesavelocation',
             'slurmdspooldir', 'slurmctldpidfile', 'slurmdpidfile', 'slurmctldlogfile', 'slurmdlogfile',
             'selecttype', 'selecttypeparameters', 'returntoservice', 'healthcheckprogram', 'healthcheckinterval',
             'healthchecknodestate')


def node_line(record, slurmd_port):
    """One NodeName line from a node's record (every value checked in phase slurm_node)."""
    words = ['NodeName=%s' % record['name']]
    if record.get('addr'):
        words.append('NodeAddr=%s' % record['addr'])
    if record.get('port') and int(record['port']) != int(slurmd_port):
        words.append('Port=%d' % int(record['port']))
    shape = record.get('shape') or {}
    if shape.get('cpus'):
        words.append('CPUs=%d' % shape['cpus'])
        if shape.get('sockets'):
            words += ['Sockets=%d' % shape['sockets'], 'CoresPerSocket=%d' % shape['cores_per_socket'],
                      'ThreadsPerCore=%d' % shape['threads_per_core']]
    if record.get('gres'):
        words.append('Gres=%s' % record['gres'])
    words.append('State=UNKNOWN')
    return ' '.join(words)


def render_slurm_conf(wanted, ctl, records, current):
    """The whole slurm.conf of a cluster the role installed. NodeName lines of nodes this run did not read stay as
    they are in the current file (a run limited to some hosts drops nobody)."""
    enforce = _flag(wanted.get('cgroup_enforce', True))
    host = ctl.get('hostname') or ctl.get('name')
    if not sc.NODE_NAME_RE.match(str(host or '')):
        raise PlanError('rocm_slurm: the controller\'s host name %r is not one Slurm accepts. Nothing was changed.'
                        % (host,))
    lines = [HEADER.rstrip('\n'),
             '# The GPUs are Slurm GRES from each node\'s facts (docs/slurm.md).',
             'ClusterName=%s' % wanted['cluster_name'],
             'SlurmctldHost=%s%s' % (host, '(%s)' % ctl['addr'] if ctl.get('addr') else ''),
             'SlurmctldPort=%d' % int(wanted['slurmctld_port']),
             'SlurmdPort=%d' % int(wanted['slurmd_port']),
             'SlurmUser=slurm',
             'AuthType=auth/munge',
             'StateSaveLocation=/var/lib/slurm/slurmctld',
             'SlurmdSpoolDir=/var/lib/slurm/slurmd',
             'SlurmctldPidFile=/run/slurmctld.pid',
             'SlurmdPidFile=/run/slurmd.pid',
             'SlurmctldLogFile=/var/log/slurm/slurmctld.log',
             'SlurmdLogFile=/var/log/slurm/slurmd.log',
             'ProctrackType=%s' % ('proctrack/cgroup' if enforce else 'proctrack/linuxproc'),
             'TaskPlugin=%s' % ('task/cgroup,task/affinity' if enforce else 'task/affinity'),
             'SelectType=select/cons_tres',
             'SelectTypeParameters=CR_Core',
             'ReturnToService=2',
             'GresTypes=gpu']
    lines += ['%s=%s' % pair for pair in health_lines(wanted)]
    lines += ['%s=%s' % (key, _text(value)) for key, value in sorted((wanted.get('conf_extra') or {}).items())]
    named = set(record['name'] for record in records)
    kept = []
    for line in current.splitlines():
        words, _comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        if pairs and pairs[0][0].lower() == 'nodename' and pairs[0][1]:
            try:
                covered = sc.expand_hostlist(pairs[0][1])
            except ValueError:
                covered = [pairs[0][1]]
            if not set(covered) & named:
                kept.append(line.strip())
    lines += sorted(kept + [node_line(record, wanted['slurmd_port']) for record in records])
    lines.append('PartitionName=%s Nodes=ALL Default=YES MaxTime=INFINITE State=UP' % wanted['partition'])
    return '\n'.join(lines) + '\n'


def edit_slurm_conf(text, records, health=None):
    """An existing slurm.conf with the lines the role owns in step with the facts: GresTypes holds gpu (other
    types stay), and each read node's NodeName line has its GPUs in Gres= (other GRES stay). Every other line and
    word is kept as it is. PlanError when a node has no line of its own."""
    lines = text.splitlines()
    by_name = dict((record['name'], record) for record in records)
    seen = set()
    grestypes_at = None
    first_node_at = None
    for index, line in enumerate(lines):
        words, comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        if not pairs:
            continue
        key = pairs[0][0].lower()
        if key == 'grestypes':
            grestypes_at = index
        elif key == 'nodename' and pairs[0][1]:
            if first_node_at is None:
                first_node_at = index
            try:
                covered = sc.expand_hostlist(pairs[0][1])
            except ValueError:
                continue
            mine = [name for name in covered if name in by_name]
            if not mine:
                continue
            values = set(by_name[name]['gres'] for name in mine)
            if len(covered) > 1 and (len(mine) != len(covered) or len(values) > 1):
                raise PlanError('rocm_slurm: slurm.conf line %d (NodeName=%s) covers nodes whose GPUs differ (or '
                                'nodes this run did not read): give %s a NodeName line of its own. Nothing was '
                                'changed.' % (index + 1, pairs[0][1], ', '.join(sorted(mine))))
            seen.update(mine)
            lines[index] = _with_gres(words, comment, values.pop())
    missing = sorted(set(by_name) - seen)
    if missing:
        raise PlanError('rocm_slurm: slurm.conf has no NodeName line for %s; with rocm_slurm_install false the role '
                        'only keeps Gres= in step on the lab\'s own node lines. Add them, or set rocm_slurm_node_name '
                        'to the names slurm.conf uses. Nothing was changed.' % ', '.join(missing))
    if grestypes_at is not None:
        words, comment = sc.split_line(lines[grestypes_at])
        types = [item for item in (sc.words_to_dict(words)[0][1] or '').split(',') if item]
        if 'gpu' not in [item.lower() for item in types]:
            lines[grestypes_at] = ' '.join(['GresTypes=%s' % ','.join(types + ['gpu'])] + words[1:]) + (
                ' ' + comment if comment else '')
    else:
        at = first_node_at if first_node_at is not None else len(lines)
        lines.insert(at, 'GresTypes=gpu' + OWNED_LINE)
    return '\n'.join(_with_health(lines, health or [])) + '\n'


def _with_health(lines, health):
    """The health check's keys set (owned lines, before the first NodeName line where new); with health [] the
    owned ones removed, the lab's own kept."""
    wanted = dict((key.lower(), (key, value)) for key, value in health)
    out, seen = [], set()
    for line in lines:
        words, comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        key = pairs[0][0].lower() if pairs else ''
        if key in ('healthcheckprogram', 'healthcheckinterval', 'healthchecknodestate'):
            if key in wanted:
                seen.add(key)
                name, value = wanted[key]
                line = line if pairs[0][1] == value else '%s=%s%s' % (name, value, OWNED_LINE)
            elif comment.strip() == OWNED_LINE.strip():
                continue
        out.append(line)
    new = ['%s=%s%s' % (name, value, OWNED_LINE) for key, (name, value) in sorted(wanted.items()) if key not in seen]
    if new:
        at = next((index for index, line in enumerate(out)
                   if (sc.words_to_dict(sc.split_line(line)[0]) or [('', '')])[0][0].lower() == 'nodename'), len(out))
        out[at:at] = new
    return out


def _with_gres(words, comment, gpu_gres):
    """A NodeName line's words with the gpu items of Gres= replaced by gpu_gres (other items kept)."""
    out, done = [], False
    for word in words:
        key, sep, value = word.partition('=')
        if sep and key.lower() == 'gres':
            others = [item for item in value.split(',') if item and item.split(':')[0].lower() != 'gpu']
            items = others + ([gpu_gres] if gpu_gres else [])
            if items:
                out.append('%s=%s' % (key, ','.join(items)))
            done = True
        else:
            out.append(word)
    if not done and gpu_gres:
        out.append('Gres=%s' % gpu_gres)
    return ' '.join(out) + (' ' + comment if comment else '')


def gres_changes(old, new):
    """The names of the nodes whose gpu GRES differ between two slurm.conf texts, sorted, when nothing else
    differs; None when anything else does (GresTypes, another key, a node definition, a comment), or there was no
    old text."""
    if not old:
        return None
    old_lines, old_gpus = _split_gpu_gres(old)
    new_lines, new_gpus = _split_gpu_gres(new)
    if old_lines != new_lines:
        return None
    changed = sorted(name for name in set(old_gpus) | set(new_gpus) if old_gpus.get(name) != new_gpus.get(name))
    return changed or None


def _split_gpu_gres(text):
    """(the lines of a slurm.conf without the gpu items of their Gres=, {node name: [its gpu items]})."""
    lines, gpus = [], {}
    for line in text.splitlines():
        words, _comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        if not pairs:
            continue
        if pairs[0][0].lower() == 'nodename':
            items = sorted(item for item in (sc.get(pairs, 'Gres') or '').split(',')
                           if item.split(':')[0].lower() == 'gpu')
            try:
                names = sc.expand_hostlist(pairs[0][1])
            except ValueError:
                names = [pairs[0][1]]
            gpus.update((name, items) for name in names)
            words = _with_gres(words, '', '').split()
        lines.append(' '.join(words))
    return lines, gpus


# --- gres.conf, cgroup.conf, /etc/default/slurmd ------------------------------------------------------------------

def gres_block(record):
    """The lines of the role's block in gres.conf, [] for a node without GPUs."""
    gpus = record.get('gpus') or []
    if not gpus:
        return []
    if record.get('autodetect'):
        return ['# slurmd has gpu_rsmi.so: Slurm finds the GPUs, their device files and cores itself.',
                'AutoDetect=rsmi']
    # Flags=amd_gpu_env: ROCR_VISIBLE_DEVICES alone (gres.conf(5): ROCm reads ROCR_ then CUDA_VISIBLE_DEVICES, so
    # both would mask twice).
    lines = ['AutoDetect=off']
    for gpu in gpus:
        words = ['Name=gpu', 'Type=%s' % gpu['type'], 'File=%s' % gpu['file'], 'Flags=amd_gpu_env']
        if gpu.get('cores'):
            words.append('Cores=%s' % gpu['cores'])
        lines.append(' '.join(words) + '  # %s' % gpu['bdf'])
    return lines


def edit_gres_conf(text, record, path):
    """(new gres.conf text or None for no file, True when the file is to be removed). The role owns its marked
    block; other lines stay. A Name=gpu line outside the block is refused (two sources for one GPU)."""
    outside, inside, state = [], [], 'out'
    for number, line in enumerate((text or '').splitlines(), 1):
        if line.strip() == BLOCK_BEGIN and state == 'out':
            state = 'in'
        elif line.strip() == BLOCK_END and state == 'in':
            state = 'done'
        elif state == 'in':
            inside.append(line)
        else:
            words, _comment = sc.split_line(line)
            pairs = sc.words_to_dict(words)
            if (sc.get(pairs, 'Name') or '').lower() == 'gpu' or (sc.get(pairs, 'AutoDetect') is not None):
                raise PlanError('rocm_slurm: %s line %d configures GPUs outside the block the role owns (%s): remove '
                                'it, the role writes every GPU of the node. Nothing was changed.'
                                % (path, number, line.strip()))
            outside.append(line)
    if state == 'in':
        raise PlanError('rocm_slurm: %s has "%s" without its end line: fix it by hand. Nothing was changed.'
                        % (path, BLOCK_BEGIN))
    block = gres_block(record)
    while outside and not outside[-1].strip():
        outside.pop()
    if not block:
        if text is None:
            return None, False
        if not [line for line in outside if line.strip()] and state == 'done':
            return None, True
        return '\n'.join(outside) + '\n' if outside else '', False
    lines = outside + ([''] if outside else []) + [BLOCK_BEGIN] + block + [BLOCK_END]
    return '\n'.join(lines) + '\n', False


def render_cgroup_conf():
    return (HEADER + '# Jobs see only the GPUs (device files) Slurm gave them, where task/cgroup runs.\n'
            'CgroupPlugin=autodetect\nConstrainDevices=yes\n')


def edit_cgroup_conf(text):
    """cgroup.conf with ConstrainDevices=yes (the one line the role owns there); other lines stay."""
    lines = (text or '').splitlines()
    for index, line in enumerate(lines):
        words, comment = sc.split_line(line)
        pairs = sc.words_to_dict(words)
        if pairs and pairs[0][0].lower() == 'constraindevices':
            if (pairs[0][1] or '').lower() == 'yes':
                return text
            lines[index] = 'ConstrainDevices=yes' + OWNED_LINE
            return '\n'.join(lines) + '\n'
    return '\n'.join(lines + ['ConstrainDevices=yes' + OWNED_LINE]) + '\n'


def edit_slurmd_defaults(text, name, hostname):
    """/etc/default/slurmd with SLURMD_OPTIONS naming the node (-N) where its Slurm name is not its host name;
    None when nothing is to be written."""
    options = '-N %s' % name if name and name != hostname else ''
    line = 'SLURMD_OPTIONS="%s"' % options
    if text is None:
        return (line + '\n') if options else None
    lines = text.splitlines()
    for index, current in enumerate(lines):
        if re.match(r'^\s*SLURMD_OPTIONS=', current):
            if current.strip() == line:
                return text
            lines[index] = line
            return '\n'.join(lines) + '\n'
    if not options:
        return text
    return '\n'.join(lines + [line]) + '\n'
