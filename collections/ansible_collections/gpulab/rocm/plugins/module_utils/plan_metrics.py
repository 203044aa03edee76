# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_metrics changes on a node: Debian's prometheus-node-exporter (installed where it is missing, an
existing one configured, not replaced) with the drm, hwmon and textfile collectors, the gpulab textfile writer (the
collection's own readers, shipped under the role's own folder) and the systemd timer that runs it. Pure but for
package_sources(), which reads the shipped module_utils from the controller's collection.

What the role owns on the node: its folder (install_dir, default /usr/lib/gpulab/metrics: a copy of the
module_utils the writer imports, in the package layout; the health check's role has its own folder beside it, so
the two never write the same file), /usr/local/sbin/gpulab-metrics-textfile, /etc/gpulab/metrics.json, the
gpulab-metrics service and timer, the node_exporter drop-in gpulab.conf, and the textfile gpulab.prom. The lab's own
node_exporter settings (/etc/default/prometheus-node-exporter: ARGS) stay as they are: the drop-in adds ours.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import re

from ansible_collections.gpulab.rocm.plugins.module_utils.plan_common import Plan, PlanError

# The module_utils the writer imports (metrics_textfile and what it imports, transitively).
SHIPPED = ('metrics_textfile', 'gpu_sysfs', 'pci', 'gfx', '_facts_common')
PACKAGE = ('ansible_collections', 'gpulab', 'rocm', 'plugins', 'module_utils')
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
    return problems


def package_sources():
    """{module name: its source} of SHIPPED, read from this collection (on the controller, where plans are made)."""
    here = os.path.dirname(os.path.abspath(__file__))
    sources = {}
    for name in SHIPPED:
        with open(os.path.join(here, name + '.py')) as handle:
            sources[name] = handle.read()
    return sources


def writer_config(node, wanted, stack):
    """The writer's /etc/gpulab/metrics.json: where to write, and what the node should show.

    expected_gpus -1: the AMD functions the probe sees on the bus now, and for the KFD the stack's
    rocm_expected_gpu_count (rocminfo agents) where it is set, else the agents the KFD lists now: a GPU that drops
    off later shows as fewer than expected.
    """
    pci = node.get('gpu_pci') or {}
    expected = wanted['expected_gpus']
    if expected >= 0:
        expected_pci = expected_kfd = expected
    else:
        expected_pci = len(pci.get('amd') or [])
        count = stack.get('expected_gpu_count', -1)
        expected_kfd = count if count >= 0 else pci.get('kfd_gpu_nodes') or 0
    return {'textfile_dir': wanted['textfile_dir'], 'textfile_name': 'gpulab.prom',
            'expected_pci': expected_pci, 'expected_kfd': expected_kfd,
            'rocm_path': wanted['rocm_path'], 'rocm_source': stack.get('install_source') or '',
            'node_class': wanted.get('node_class') or '', 'health_file': wanted['health_file'],
            'sysfs_root': wanted.get('sysfs_root') or '/sys'}


def cli_script(install_dir):
    return ('#!/usr/bin/python3\n'
            '# gpulab-metrics-textfile: written by the rocm_metrics role (gpulab.rocm). The gpulab_* metrics of this\n'
            '# node for node_exporter\'s textfile collector; run by gpulab-metrics.timer.\n'
            'import sys\n'
            'sys.path.insert(0, %s)\n'
            'from ansible_collections.gpulab.rocm.plugins.module_utils import metrics_textfile\n'
            'sys.exit(metrics_textfile.main())\n' % json.dumps(install_dir))


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


def plan(node, wanted, stack):
    """wanted: enabled, packages, collectors, textfile_dir, install_dir, interval, listen_address, node_class,
    expected_gpus, health_file, rocm_path, systemd (whether systemd runs the node), sysfs_root.

    Returns the Plan: skip (a reason or None), install [packages], dirs [folders], files {path: text} (0644),
    executables {path: text} (0755), config (the writer's), node_exporter_args (the flags the drop-in adds), systemd.
    """
    result = Plan('metrics')
    result.update(skip=None, install=[], dirs=[], files={}, executables={}, config=None, node_exporter_args=[],
                  systemd=bool(wanted.get('systemd')))
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
    package_dir = os.path.join(wanted['install_dir'], *PACKAGE)
    result['dirs'] = [os.path.join(wanted['install_dir'], *PACKAGE[:depth]) for depth in range(len(PACKAGE) + 1)]
    result['dirs'] += ['/etc/gpulab', wanted['textfile_dir'], DROPIN_DIR]
    config = writer_config(node, wanted, stack)
    result['config'] = config
    files = dict((os.path.join(package_dir, name + '.py'), text) for name, text in package_sources().items())
    files[CONFIG] = json.dumps(config, indent=2, sort_keys=True) + '\n'
    files.update(units(wanted))
    result['files'] = files
    result['executables'] = {CLI: cli_script(wanted['install_dir'])}
    result['node_exporter_args'] = units(wanted)[DROPIN_DIR + '/gpulab.conf'].rsplit(' $ARGS ', 1)[1].split()
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
