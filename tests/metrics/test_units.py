# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The systemd units rocm_metrics writes, checked by the real `systemd-analyze verify` (the systemd package; a
missing systemd-analyze fails, never skips).

The test containers have no systemd, so the scenarios never start these units (docs/metrics.md says why no
scenario boots one). This is the static check instead: the timer, its service and node_exporter's drop-in over
Debian's own prometheus-node-exporter.service (a capture from its package), laid out under a root folder with the
host's systemd targets and slices (the units' default dependencies) and the commands they start. systemd-analyze
loads them as systemd would: an unknown directive, a directive in the wrong section, a bad time span or a command
that is not there is reported.
"""

import os
import shutil
import subprocess

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_metrics, planner

HERE = os.path.dirname(os.path.abspath(__file__))
CAPTURE = os.path.join(HERE, '..', '..', 'collections', 'ansible_collections', 'gpulab', 'rocm', 'tests', 'unit',
                       'plugins', 'module_utils', 'fixtures', 'systemd',
                       'prometheus-node-exporter-1.5.0-1+b6-debian12.service')
BASE_UNIT = '/lib/systemd/system/prometheus-node-exporter.service'
WANTED = {'enabled': True, 'packages': ['prometheus-node-exporter'], 'collectors': ['drm', 'hwmon', 'textfile'],
          'textfile_dir': '/var/lib/prometheus/node-exporter', 'listen_address': ':9100', 'interval': '1min',
          'node_class': '', 'expected_gpus': -1, 'install_dir': '/usr/lib/gpulab/python',
          'health_file': '/var/lib/gpulab/health/last.json', 'rocm_path': '/opt/rocm', 'sysfs_root': '/sys',
          'systemd': True}
NODE = {'os': {'euid': 0}, 'packages': {'prometheus-node-exporter': ['ii', '1.5.0-1+b6']}, 'gpu_pci': {'amd': []}}
STACK = {'expected_gpu_count': -1, 'install_source': 'amd', 'version': '7.2.3'}


def host_units():
    """The host's unit folder (Debian: /lib/systemd/system, merged /usr: /usr/lib/systemd/system)."""
    for folder in ('/lib/systemd/system', '/usr/lib/systemd/system'):
        if os.path.isfile(os.path.join(folder, 'sysinit.target')):
            return folder
    pytest.fail('no systemd unit folder with sysinit.target on this host: install systemd')


def put(root, path, text, mode=0o644):
    target = os.path.join(root, path.lstrip('/'))
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, 'w') as handle:
        handle.write(text)
    os.chmod(target, mode)


def lay_out(root, plan):
    """The plan's units and command under root, with what they need from a Debian host: its targets and slices
    (copied: systemd refuses linked ones), Debian's node_exporter unit, /bin/kill (its ExecReload) and a stand-in
    for the node_exporter binary (verify only checks that the command is an executable file)."""
    units = host_units()
    os.makedirs(os.path.join(root, 'lib/systemd/system'))
    for name in os.listdir(units):
        if name.endswith(('.target', '.slice')) and os.path.isfile(os.path.join(units, name)):
            shutil.copyfile(os.path.join(units, name), os.path.join(root, 'lib/systemd/system', name))
    with open(CAPTURE) as handle:
        put(root, BASE_UNIT, handle.read())
    for path, text in plan['files'].items():
        if path.startswith(plan_metrics.UNIT_DIR):
            put(root, path, text)
    for path, text in plan['executables'].items():
        put(root, path, text, 0o755)
    put(root, plan_metrics.NODE_EXPORTER_BIN, '#!/bin/sh\n# TEST FIXTURE: stands for Debian\'s node_exporter\n', 0o755)
    put(root, '/etc/default/prometheus-node-exporter', 'ARGS=""\n')
    os.makedirs(os.path.join(root, 'bin'), exist_ok=True)
    shutil.copy(shutil.which('kill') or '/bin/kill', os.path.join(root, 'bin', 'kill'))


def verify(root):
    path = shutil.which('systemd-analyze')
    assert path, 'systemd-analyze is missing: install the systemd package'
    units = ['/etc/systemd/system/gpulab-metrics.timer', '/etc/systemd/system/gpulab-metrics.service', BASE_UNIT]
    run = subprocess.run([path, 'verify', '--root=%s' % root] + units, stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, check=False)
    return run.returncode, run.stdout.decode()


@pytest.mark.parametrize('interval, collectors', [('1min', ['drm', 'hwmon', 'textfile']), ('90s', ['textfile'])])
def test_the_units_and_the_drop_in_verify_clean(tmp_path, interval, collectors):
    plan = planner.plan('metrics', NODE, dict(WANTED, interval=interval, collectors=collectors), STACK)
    lay_out(str(tmp_path), plan)
    assert verify(str(tmp_path)) == (0, '')


@pytest.mark.parametrize('path, old, new, message', [
    # A mistake in the drop-in is seen: systemd-analyze reads it over Debian's unit.
    (plan_metrics.DROPIN_DIR + '/gpulab.conf', 'ExecStart=\n', 'ExecStrat=\n', "Unknown key 'ExecStrat'"),
    (plan_metrics.DROPIN_DIR + '/gpulab.conf', '/usr/bin/prometheus-node-exporter',
     '/usr/sbin/prometheus-node-exporter', 'is not executable'),
    (plan_metrics.UNIT_DIR + '/gpulab-metrics.timer', 'OnUnitActiveSec=1min', 'OnUnitActiveSec=1 mni',
     'Failed to parse'),
    (plan_metrics.UNIT_DIR + '/gpulab-metrics.service', 'ProtectSystem=strict', 'ProtectSystem=very',
     "Failed to parse protect system value"),
])
def test_a_broken_unit_is_reported(tmp_path, path, old, new, message):
    """The check has teeth: each of these edits of the planned units makes systemd-analyze say so."""
    plan = planner.plan('metrics', NODE, WANTED, STACK)
    assert old in plan['files'][path]
    plan['files'][path] = plan['files'][path].replace(old, new)
    lay_out(str(tmp_path), plan)
    _rc, out = verify(str(tmp_path))
    assert message in out, out
