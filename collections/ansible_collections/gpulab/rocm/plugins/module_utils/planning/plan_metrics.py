# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_metrics changes on a node: Debian's prometheus-node-exporter (installed where it is missing, an
existing one configured, not replaced) with the drm, hwmon and textfile collectors, the gpulab textfile writer (the
collection's node code, planning/node_code.py) and the systemd timer that runs it. Pure but for node_code's reading
of the shipped module_utils from the controller's collection.

What the role writes on the node: the node code in install_dir (default /usr/lib/gpulab/python, where rocm_health
writes the same files from the same list), /usr/local/sbin/gpulab-metrics-textfile, /etc/gpulab/metrics.json, the
gpulab-metrics service and timer, the node_exporter drop-in gpulab.conf, and the textfile gpulab.prom. The lab's own
node_exporter settings (/etc/default/prometheus-node-exporter: ARGS) stay as they are: the drop-in adds ours.

Optionally (amd_exporter), on nodes whose GPUs are all Instinct MI2xx/MI3xx, AMD's device-metrics-exporter
(package amdgpu-exporter, where a configured apt source offers it) and its /etc/metrics/config.json, whose field and
label names are checked against AMD's own lists (amd_exporter_fields.py) first.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import json
import os
import re

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import amd_exporter_fields, gpu_count, gpu_support, node_code
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'metrics',
    'role': 'rocm_metrics',
    'changes_host': True,
    'sections': ('os', 'packages', 'gpus', 'health'),
    'keys': {
        'install': 'Packages to install (prometheus-node-exporter) where the host lacks them.',
        'dirs': "Folders of the writer's code, its configuration and node_exporter's drop-in (the writer makes a "
                'missing textfile folder itself and never changes the lab\'s own).',
        'library': "The writer's code (the collection's module_utils it runs), path to content.",
        'files': "The writer's configuration, the units and the drop-in, path to content.",
        'executables': "The writer's command (mode 0755), path to content.",
        'systemd': 'Whether systemd runs the host (the timer and node_exporter are started there).',
        'services': 'The units to enable and start where systemd runs (the timer, node_exporter, AMD\'s exporter).',
        'amd_exporter_query': "Packages to ask apt about (AMD's amdgpu-exporter, before it is installed).",
        'remove': ("Removed (state absent): units (stopped and disabled first), files, trees, prune (folders removed "
                   "only where empty) and node_exporter (restart it where it runs: our drop-in is gone)."),
    },
}


CLI = '/usr/local/sbin/gpulab-metrics-textfile'
CONFIG = '/etc/gpulab/metrics.json'
UNIT_DIR = '/etc/systemd/system'
DROPIN_DIR = '/etc/systemd/system/prometheus-node-exporter.service.d'
NODE_EXPORTER_BIN = '/usr/bin/prometheus-node-exporter'
# node_exporter 1.5+ collectors that read sysfs for GPUs (drm, hwmon) or files (textfile).
COLLECTORS = ('drm', 'hwmon', 'textfile')
_PATH = re.compile(r'^/[A-Za-z0-9_./-]*\Z')
_CLASS = re.compile(r'^[A-Za-z0-9_.-]{0,64}\Z')
_INTERVAL = re.compile(r'^[1-9][0-9]{0,4}(s|min)\Z')
_PACKAGE = re.compile(r'^[a-z0-9][a-z0-9+.-]+\Z')
_LISTEN = re.compile(r'^(127\.0\.0\.1|0\.0\.0\.0|\[::1?\])?:[0-9]{2,5}\Z')
# AMD's device-metrics-exporter: its package, its service (deb-package.rst: enable and start it), and the gfx targets
# of the platforms its metrics-support-matrix.yaml lists (MI2xx: gfx90a; MI3xx: gfx942, gfx950). Its v1.5.1 also
# names MI350P and "Radeon AI" platforms on ROCm 7.13 or later (docs/index.md), without a device list: not here yet.
AMD_EXPORTER_PACKAGE = 'amdgpu-exporter'
AMD_EXPORTER_SERVICE = 'amd-metrics-exporter'
AMD_EXPORTER_GFX = ('gfx90a', 'gfx942', 'gfx950')
# A Prometheus label name; AMD lower-cases custom label names (gpuagent_gpu_metrics.go, initCustomLabels).
_CUSTOM_LABEL = re.compile(r'^[a-z_][a-z0-9_]{0,63}\Z')
_CUSTOM_VALUE = re.compile(r'^[A-Za-z0-9_.:/@+ -]{0,128}\Z')


def has_work(plan, wanted):
    """It rewrites its textfile on every run where it is on; removed (state absent), it tidies the emptied folders
    of a run that stopped half way."""
    if absent(wanted):
        return bool((plan.get('remove') or {}).get('prune'))
    return bool(wanted.get('enabled'))


def check(wanted):
    """Every invalid value of the wanted state, named with its variable and what it accepts."""
    problems = []
    for key in ('textfile_dir', 'install_dir', 'health_file', 'rocm_path'):
        value = wanted.get(key)
        if not isinstance(value, str) or not _PATH.match(value) or '/../' in value + '/' or value == '/':
            problems.append('rocm_metrics_%s must be an absolute path of letters, digits and ._-/ (not %r)'
                            % (key, value))
    if not _CLASS.match(str(wanted.get('node_class') or '')):
        problems.append('rocm_metrics_node_class must be letters, digits and ._- (up to 64), not %r'
                        % wanted.get('node_class'))
    if not _INTERVAL.match(str(wanted.get('interval'))):
        problems.append("rocm_metrics_interval must be a systemd span like 60s or 1min, not %r" % wanted.get('interval'))
    listen = str(wanted.get('listen_address'))
    if not _LISTEN.match(listen) or not 0 < int(listen.rsplit(':', 1)[1]) < 65536:
        problems.append("rocm_metrics_listen_address must be [address]:port such as ':9100' or '127.0.0.1:9100', "
                        'not %r' % wanted.get('listen_address'))
    unknown = [name for name in wanted.get('collectors') or [] if name not in COLLECTORS]
    if unknown:
        problems.append('rocm_metrics_collectors: %s not among %s' % (', '.join(map(repr, unknown)),
                                                                      ', '.join(COLLECTORS)))
    bad = [name for name in wanted.get('packages') or [] if not _PACKAGE.match(str(name))]
    if bad or not wanted.get('packages'):
        problems.append('rocm_metrics_packages must list Debian package names, not %r' % wanted.get('packages'))
    expected = wanted.get('expected_gpus')
    if isinstance(expected, bool) or not isinstance(expected, int) or expected < -1:
        problems.append('rocm_metrics_expected_gpus must be -1 (what the node shows now) or a count, not %r'
                        % expected)
    if wanted.get('amd_exporter'):
        problems += check_amd_exporter(wanted)
    return problems


def _unknown(kind, variable, names, valid):
    """A problem for each name not in valid, with the nearest valid name where one is close."""
    problems = []
    for name in names:
        if name in valid:
            continue
        near = difflib.get_close_matches(str(name).upper(), valid, n=1, cutoff=0.6)
        problems.append('%s: %r is not one of AMD\'s %s names (%s)%s' % (
            variable, name, kind, amd_exporter_fields.SOURCE,
            '; the nearest is %r' % near[0] if near else ''))
    return problems


def check_amd_exporter(wanted):
    """The problems of AMD's exporter settings: field and label names not in AMD's lists, custom labels AMD would
    ignore or a value unfit for its JSON, the port."""
    fields, labels = wanted.get('amd_exporter_fields'), wanted.get('amd_exporter_labels')
    custom = wanted.get('amd_exporter_custom_labels')
    if not isinstance(fields, list) or not isinstance(labels, list) or not isinstance(custom, dict):
        return ['rocm_metrics_amd_exporter_fields and rocm_metrics_amd_exporter_labels must be lists, and '
                'rocm_metrics_amd_exporter_custom_labels a mapping']
    problems = _unknown('GPU metric field', 'rocm_metrics_amd_exporter_fields', fields,
                        amd_exporter_fields.GPU_FIELDS)
    problems += _unknown('label', 'rocm_metrics_amd_exporter_labels', labels, amd_exporter_fields.LABELS)
    taken = [label.lower() for label in amd_exporter_fields.LABELS]
    for name, value in sorted(custom.items(), key=str):
        if not isinstance(name, str) or not _CUSTOM_LABEL.match(name) or name in taken:
            problems.append('rocm_metrics_amd_exporter_custom_labels: %r must be a lower-case Prometheus label name '
                            '(letters, digits, _) that is not one of AMD\'s own labels' % (name,))
        if not isinstance(value, str) or not _CUSTOM_VALUE.match(value):
            problems.append('rocm_metrics_amd_exporter_custom_labels: the value of %r must be up to 128 letters, '
                            'digits, spaces and _.:/@+-, not %r' % (name, value))
    if len(custom) > amd_exporter_fields.MAX_CUSTOM_LABELS:
        problems.append('rocm_metrics_amd_exporter_custom_labels: AMD\'s exporter takes at most %d, not %d'
                        % (amd_exporter_fields.MAX_CUSTOM_LABELS, len(custom)))
    port = wanted.get('amd_exporter_port')
    if isinstance(port, bool) or not isinstance(port, int) or not 0 < port < 65536:
        problems.append('rocm_metrics_amd_exporter_port must be a TCP port, not %r' % (port,))
    elif str(wanted.get('listen_address')).endswith(':%d' % port):
        problems.append('rocm_metrics_amd_exporter_port %d is node_exporter\'s port (rocm_metrics_listen_address): '
                        'give AMD\'s exporter another' % port)
    return problems


def amd_exporter_config(wanted):
    """AMD's /etc/metrics/config.json from the role's values (its keys as AMD's example/config.json has them)."""
    gpu = {'Fields': list(wanted['amd_exporter_fields']), 'Labels': list(wanted['amd_exporter_labels'])}
    if wanted['amd_exporter_custom_labels']:
        gpu['CustomLabels'] = dict(wanted['amd_exporter_custom_labels'])
    return json.dumps({'ServerPort': wanted['amd_exporter_port'], 'GPUConfig': gpu}, indent=2, sort_keys=True) + '\n'


def amd_exporter_unfit(node):
    """Why AMD's exporter does not apply to this node's GPUs, or None where it does (every AMD GPU an Instinct
    MI2xx/MI3xx, none a virtual function)."""
    gpus = gpu_support.amd_gpus(node.get('gpu_pci'))
    if not gpus:
        return 'the node has no AMD GPU'
    vfs = sorted(set(dev.get('bdf') for dev in (node.get('gpu_pci') or {}).get('amd') or [] if dev.get('sriov_vf')))
    if vfs:
        return ('%s %s SR-IOV virtual functions: AMD\'s metrics-support-matrix.yaml supports no hypervisor guest'
                % (', '.join(vfs), 'is an' if len(vfs) == 1 else 'are'))
    other = sorted(set('%s (%s)' % (gpu.get('name') or 'an unknown AMD GPU', gpu.get('gfx_target') or 'no gfx target')
                       for gpu in gpus if (gpu.get('gfx_target') or '').split(':')[0] not in AMD_EXPORTER_GFX))
    if other:
        verb = 'is' if len(other) == 1 else 'are'
        return ('%s %s not an Instinct MI2xx/MI3xx, the GPUs the role installs it for (AMD\'s '
                'metrics-support-matrix.yaml; AMD closed APU support as wontfix, ROCm/device-metrics-exporter issue '
                '281, and lists "Radeon AI" cards only from ROCm 7.13)' % (', '.join(other), verb))
    return None


def plan_amd_exporter(node, wanted, result):
    """AMD's exporter into the plan: its package where apt offers it (asked once: 'amd_exporter_query', then the
    probe's 'candidates'), its config.json, its service; a note where it is skipped and why."""
    why = amd_exporter_unfit(node)
    if why:
        result.warn('AMD\'s exporter (rocm_metrics_amd_exporter_enabled) is skipped: %s. The gpulab_* textfile and '
                    'node_exporter\'s drm collector cover this node.' % why)
        return
    installed = ((node.get('packages') or {}).get(AMD_EXPORTER_PACKAGE) or ['  '])[0][1] == 'i'
    if not installed:
        candidates = node.get('candidates')
        if candidates is None or AMD_EXPORTER_PACKAGE not in candidates:
            # Not a change (the plan pass's changes drain a Slurm node): the role asks, then plans again.
            result['amd_exporter_query'] = [AMD_EXPORTER_PACKAGE]
            return
        if not candidates[AMD_EXPORTER_PACKAGE]:
            result.warn('AMD\'s exporter is skipped: no configured apt source offers %s (AMD publishes it in its own '
                        'repository, device-metrics-exporter/apt/<version>, for Ubuntu; add that '
                        'source or a mirror of it)' % AMD_EXPORTER_PACKAGE)
            return
        result['install'].append(AMD_EXPORTER_PACKAGE)
        result.change('install %s' % AMD_EXPORTER_PACKAGE, 'rocm_metrics_amd_exporter_enabled is true, the node\'s '
                      'GPUs are Instinct and apt offers it')
    result['dirs'].append(os.path.dirname(amd_exporter_fields.CONFIG_FILE))
    result['files'][amd_exporter_fields.CONFIG_FILE] = amd_exporter_config(wanted)
    result['services'].append(AMD_EXPORTER_SERVICE)


def count_rule(node, wanted, stack):
    """The expected GPU count (gpu_count.expected) with rocm_metrics_expected_gpus as the role's override."""
    return gpu_count.expected(node, stack, wanted['expected_gpus'], override_source='rocm_metrics_expected_gpus',
                              variable='rocm_metrics_expected_gpus')


def writer_config(node, wanted, stack):
    """The writer's /etc/gpulab/metrics.json: where to write, and what the node should show.

    expected_pci: the count of gpu_count.expected in PCI functions (rocm_metrics_expected_gpus, else the count the
    health data file recorded where the bus shows fewer, else the AMD functions on the bus now; the stack-wide
    rocm_expected_gpu_count counts rocminfo agents, so it sets expected_kfd only). expected_kfd: the KFD GPU nodes (rocminfo agents: a partitioned GPU has
    several): the set count where one is set, the agents KFD lists now plus those of the GPUs missing from the bus
    where the recorded count is above it, else the agents KFD lists now. A GPU that drops off later shows as fewer
    than expected.
    """
    pci = node.get('gpu_pci') or {}
    rule = count_rule(node, wanted, stack)
    # rocm_expected_gpu_count counts rocminfo agents (a partitioned GPU is several): it sets the KFD expectation; the
    # PCI functions' comes from the same rule without it.
    pci_rule = rule if rule['source'] != gpu_count.STACK else count_rule(node, wanted, dict(stack, expected_gpu_count=-1))
    nodes = pci.get('kfd_gpu_nodes') or 0
    if rule['configured']:
        expected_kfd = rule['count']
    elif rule['source'] == gpu_count.RECORDED:
        physical = pci.get('kfd_physical_gpus') or 0
        per_gpu = max(1, nodes // physical) if physical else 1
        expected_kfd = nodes + (rule['count'] - rule['found']) * per_gpu
    else:
        expected_kfd = nodes
    return {'textfile_dir': wanted['textfile_dir'], 'textfile_name': 'gpulab.prom',
            'expected_pci': pci_rule['count'], 'expected_kfd': expected_kfd,
            'rocm_path': wanted['rocm_path'], 'rocm_source': stack.get('install_source') or '',
            'node_class': wanted.get('node_class') or '', 'health_file': wanted['health_file'],
            'sysfs_root': wanted.get('sysfs_root') or '/sys'}


def cli_script(install_dir):
    return node_code.entry_script('gpulab-metrics-textfile', "the GPU metrics for node_exporter's textfile collector, run "
                                  'by gpulab-metrics.timer', 'rocm_metrics', 'docs/metrics.md', install_dir,
                                  'metrics_textfile', 'main')


def units(wanted):
    """The writer's service and timer, and node_exporter's drop-in (its own ARGS kept, our collectors added)."""
    flags = ['--collector.%s' % name for name in wanted['collectors']]
    if 'textfile' in wanted['collectors']:
        flags.append('--collector.textfile.directory=%s' % wanted['textfile_dir'])
    flags.append('--web.listen-address=%s' % wanted['listen_address'])
    return {
        UNIT_DIR + '/gpulab-metrics.service': (
            '# Written by the rocm_metrics role (gpulab.rocm).\n[Unit]\nDescription=gpulab GPU metrics textfile\n\n'
            '[Service]\nType=oneshot\nExecStart=%s\nNice=10\n'
            # It reads sysfs and two files, and writes only the textfile folder.
            'NoNewPrivileges=yes\nProtectSystem=strict\nProtectHome=yes\nPrivateTmp=yes\nReadWritePaths=%s\n'
            % (CLI, wanted['textfile_dir'])),
        UNIT_DIR + '/gpulab-metrics.timer': (
            '# Written by the rocm_metrics role (gpulab.rocm).\n[Unit]\nDescription=gpulab GPU metrics textfile, '
            'every %s\n\n[Timer]\nOnBootSec=30s\nOnUnitActiveSec=%s\nAccuracySec=5s\n\n[Install]\n'
            'WantedBy=timers.target\n' % (wanted['interval'], wanted['interval'])),
        DROPIN_DIR + '/gpulab.conf': (
            '# Written by the rocm_metrics role (gpulab.rocm): the lab\'s ARGS of /etc/default/prometheus-node-exporter\n'
            '# stay; the collectors the GPU metrics need are added.\n[Service]\nExecStart=\n'
            'ExecStart=%s $ARGS %s\n' % (NODE_EXPORTER_BIN, ' '.join(flags))),
    }


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: enabled, packages, collectors, textfile_dir, install_dir, interval, listen_address, node_class,
    expected_gpus, health_file, rocm_path, sysfs_root; amd_exporter,
    amd_exporter_fields, amd_exporter_labels, amd_exporter_custom_labels, amd_exporter_port.

    Returns the Plan: skip (a reason or None), install [packages], dirs [folders], library {path: text} (the writer's
    code, 0644), files {path: text} (its configuration and the units, 0644),
    executables {path: text} (0755), config (the writer's), node_exporter_args (the flags the drop-in adds), systemd
    (whether systemd runs the node: the probe's os.systemd),
    services (the units to enable and start where systemd runs), amd_exporter_query (packages to ask apt about).
    """
    if absent(wanted):
        return plan_absent(node, wanted)
    result = Plan('metrics')
    result.update(skip=None, install=[], dirs=[], library={}, files={}, executables={}, config=None,
                  node_exporter_args=[],
                  systemd=bool((node.get('os') or {}).get('systemd')), services=[], amd_exporter_query=[])
    if not wanted.get('enabled'):
        result['skip'] = 'rocm_metrics_enabled is false'
        return result
    problems = check(wanted)
    if problems:
        raise PlanError('rocm_metrics: %s. Nothing was changed.' % '; '.join(problems))
    packages = node.get('packages') or {}
    result['install'] = [name for name in wanted['packages'] if (packages.get(name) or ['  '])[0][1] != 'i']
    for name in result['install']:
        result.change('install %s' % name, 'node_exporter serves the GPU metrics (Debian\'s package)')
    # Not the textfile folder: one that is there is the lab's (Debian's package makes it), never taken over; the
    # writer makes it where it is missing (metrics_textfile.textfile_folder).
    result['dirs'] = node_code.folders(wanted['install_dir']) + ['/etc/gpulab', DROPIN_DIR]
    config = writer_config(node, wanted, stack)
    result['config'] = config
    for notice in count_rule(node, wanted, stack)['notices']:
        result.warn('gpulab_gpus_expected: %s' % notice)
    result['library'] = node_code.library_files(wanted['install_dir'])
    files = {CONFIG: json.dumps(config, indent=2, sort_keys=True) + '\n'}
    files.update(units(wanted))
    result['files'] = files
    result['executables'] = {CLI: cli_script(wanted['install_dir'])}
    result['node_exporter_args'] = units(wanted)[DROPIN_DIR + '/gpulab.conf'].rsplit(' $ARGS ', 1)[1].split()
    result['services'] = ['gpulab-metrics.timer', 'prometheus-node-exporter']
    if wanted.get('amd_exporter'):
        plan_amd_exporter(node, wanted, result)
    if not result['systemd']:
        result.warn('systemd does not run this host (a container): the timer and node_exporter are configured, not '
                    'started; run %s and prometheus-node-exporter by other means' % CLI)
    return result


def file_sd_targets(hosts):
    """Prometheus file_sd targets from the inventory: [{'targets': ['host:port'], 'labels': {'node_class'}}], one
    entry per node class, sorted. hosts: [{'address' (the host's name or address), 'node_class', 'listen_address'}].
    """
    groups = {}
    for host in hosts:
        port = str(host['listen_address']).rsplit(':', 1)[1]
        groups.setdefault(host.get('node_class') or '', []).append('%s:%s' % (host['address'], port))
    return [{'targets': sorted(targets), 'labels': {'node_class': node_class}} if node_class else
            {'targets': sorted(targets), 'labels': {}} for node_class, targets in sorted(groups.items())]


# The writer's code folder of earlier releases (rocm_metrics_install_dir's default before the shared one).
LEGACY_INSTALL_DIR = '/usr/lib/gpulab/metrics'
UNITS = ('gpulab-metrics.timer', 'gpulab-metrics.service')


def absent(wanted):
    """Whether the role removes what it installed (rocm_metrics_state: absent)."""
    return wanted.get('state', 'present') == 'absent'


def absent_paths(wanted):
    """The paths the removal plan reads: what the role writes, the shared code's folders and its other users."""
    dropin = DROPIN_DIR + '/gpulab.conf'
    paths = [CLI, CONFIG, UNIT_DIR + '/gpulab-metrics.service', UNIT_DIR + '/gpulab-metrics.timer', dropin, DROPIN_DIR,
             '/etc/gpulab', '/usr/lib/gpulab', LEGACY_INSTALL_DIR]
    install_dir = wanted.get('install_dir') or node_code.LIB
    paths += [install_dir, install_dir + '/' + node_code.PACKAGE.split('/', 1)[0]]
    if wanted.get('textfile_dir'):
        paths.append(wanted['textfile_dir'].rstrip('/') + '/gpulab.prom')
    return paths + [path for users in node_code.CODE_USERS.values() for path in users]


def probe_needs(node, wanted, stack, fresh=()):
    """Removed (state absent): the paths it removes and those its decisions read (the probe's paths section)."""
    if not absent(wanted):
        return None
    missing = sorted(set(path for path in absent_paths(wanted) if path not in (node.get('paths') or {})))
    return {'sections': ['paths'], 'paths': missing} if missing else None


def plan_absent(node, wanted):
    """Removed (rocm_metrics_state: absent): the timer and service (stopped, disabled, their unit files removed),
    node_exporter's drop-in (node_exporter restarted where it runs, with the lab's own ARGS only), the writer's
    command, configuration and textfile, the shared node code where the health check does not need it, and our
    folders where nothing else is left. node_exporter stays installed (the lab may use it; docs/metrics.md), as does
    AMD's exporter and its configuration."""
    problems = [problem for problem in check(dict(wanted, packages=wanted.get('packages') or ['x']))
                if problem.startswith(('rocm_metrics_textfile_dir', 'rocm_metrics_install_dir'))]
    if problems:
        raise PlanError('rocm_metrics: %s. Nothing was changed.' % '; '.join(problems))
    result = Plan('metrics')
    result.update(skip=None, install=[], dirs=[], library={}, files={}, executables={}, config=None,
                  node_exporter_args=[], systemd=bool((node.get('os') or {}).get('systemd')), services=[],
                  amd_exporter_query=[],
                  remove={'units': [], 'files': [], 'trees': [], 'prune': [], 'node_exporter': False})
    paths = node.get('paths') or {}
    dropin = DROPIN_DIR + '/gpulab.conf'
    service, timer = UNIT_DIR + '/gpulab-metrics.service', UNIT_DIR + '/gpulab-metrics.timer'
    if result['systemd']:
        result['remove']['units'] = [name for name, path in zip(UNITS, (timer, service))
                                     if (paths.get(path) or {}).get('exists')]
    textfile = wanted['textfile_dir'].rstrip('/') + '/gpulab.prom'
    for path in (timer, service, dropin, CLI, CONFIG, textfile):
        info = paths.get(path) or {}
        if not info.get('exists'):
            continue
        if info.get('type') not in ('file', 'symlink'):
            raise PlanError('rocm_metrics: %s is a %s, not the file the role wrote: root does not remove it. Remove '
                            'it yourself, or set rocm_metrics_state: present. Nothing was changed.'
                            % (path, info.get('type')))
        result['remove']['files'].append(path)
        result.change('remove %s' % path, 'rocm_metrics_state is absent' + (
            ' (the timer is stopped and disabled first)' if path == timer else
            " (node_exporter restarts where it runs, with the lab's own ARGS)" if path == dropin else ''))
    result['remove']['node_exporter'] = dropin in result['remove']['files'] and result['systemd']
    if (paths.get(LEGACY_INSTALL_DIR) or {}).get('type') == 'directory' and wanted['install_dir'] != LEGACY_INSTALL_DIR:
        result['remove']['trees'].append(LEGACY_INSTALL_DIR)
        result.change('remove %s' % LEGACY_INSTALL_DIR, "the writer's code of an earlier release")
    node_code.code_removal(node, 'metrics', wanted['install_dir'], result)
    result['remove']['prune'] = [DROPIN_DIR, '/etc/gpulab'] + result['remove']['prune'] + (
        ['/usr/lib/gpulab'] if LEGACY_INSTALL_DIR in result['remove']['trees'] else [])
    node_code.prune_changes(node, result, "only the metrics' files were in it")
    if not result['systemd'] and (paths.get(service) or {}).get('exists'):
        result.warn('systemd does not run this host (a container): the timer\'s unit files are removed, nothing is '
                    'stopped')
    return result
