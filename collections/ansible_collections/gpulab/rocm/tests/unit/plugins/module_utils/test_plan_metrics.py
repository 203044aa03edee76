# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_metrics: what rocm_metrics writes, from a probe and its variables; the shipped writer runs on its own."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils import plan_metrics, planner
from ansible_collections.gpulab.rocm.plugins.module_utils.plan_common import PlanError

WANTED = {'enabled': True, 'packages': ['prometheus-node-exporter'], 'collectors': ['drm', 'hwmon', 'textfile'],
          'textfile_dir': '/var/lib/prometheus/node-exporter', 'listen_address': ':9100', 'interval': '1min',
          'node_class': 'mi200_nodes', 'expected_gpus': -1, 'install_dir': '/usr/lib/gpulab/metrics',
          'health_file': '/var/lib/gpulab/health/last.json', 'rocm_path': '/opt/rocm', 'sysfs_root': '/sys',
          'systemd': True}
STACK = {'expected_gpu_count': -1, 'install_source': 'amd', 'version': '6.2.4'}
NODE = {'os': {'euid': 0}, 'packages': {'prometheus-node-exporter': ['ii', '1.5.0-1+b6']},
        'gpu_pci': {'amd': [{'bdf': '0000:c1:00.0'}, {'bdf': '0000:d1:00.0'}], 'kfd_gpu_nodes': 2}}


def test_disabled_changes_nothing():
    result = planner.plan('metrics', NODE, dict(WANTED, enabled=False), STACK)
    assert result['skip'] == 'rocm_metrics_enabled is false' and not result['files']


def test_an_existing_node_exporter_is_configured_not_installed():
    result = planner.plan('metrics', NODE, WANTED, STACK)
    assert result['install'] == [] and result['changes'] == []
    dropin = result['files'][plan_metrics.DROPIN_DIR + '/gpulab.conf']
    assert 'ExecStart=\nExecStart=/usr/bin/prometheus-node-exporter $ARGS --collector.drm --collector.hwmon ' \
           '--collector.textfile --collector.textfile.directory=/var/lib/prometheus/node-exporter ' \
           '--web.listen-address=:9100\n' in dropin
    config = json.loads(result['files'][plan_metrics.CONFIG])
    assert (config['expected_pci'], config['expected_kfd'], config['node_class']) == (2, 2, 'mi200_nodes')
    service = result['files'][plan_metrics.UNIT_DIR + '/gpulab-metrics.service']
    assert 'ExecStart=/usr/local/sbin/gpulab-metrics-textfile\n' in service
    assert 'ProtectSystem=strict\n' in service and 'ReadWritePaths=/var/lib/prometheus/node-exporter\n' in service


def test_a_missing_node_exporter_is_installed():
    result = planner.plan('metrics', dict(NODE, packages={}), WANTED, STACK)
    assert result['install'] == ['prometheus-node-exporter']
    assert result['changes'][0]['change'] == 'install prometheus-node-exporter'


def test_the_stack_count_sets_the_kfd_expectation():
    result = planner.plan('metrics', NODE, WANTED, dict(STACK, expected_gpu_count=8))
    assert json.loads(result['files'][plan_metrics.CONFIG])['expected_kfd'] == 8


def test_no_systemd_is_said():
    result = planner.plan('metrics', NODE, dict(WANTED, systemd=False), STACK)
    assert 'systemd does not run this host' in result['notices'][0]


@pytest.mark.parametrize('key, value, message', [
    ('textfile_dir', 'relative/dir', 'rocm_metrics_textfile_dir must be an absolute path'),
    ('install_dir', '/usr/lib/../etc', 'rocm_metrics_install_dir must be an absolute path'),
    ('node_class', 'mi300 nodes', 'rocm_metrics_node_class must be letters'),
    ('interval', '1 hour', 'rocm_metrics_interval must be a systemd span'),
    ('listen_address', '9100', 'rocm_metrics_listen_address must be [address]:port'),
    ('collectors', ['drm', 'gpu'], "rocm_metrics_collectors: 'gpu' not among"),
    ('packages', ['node exporter'], 'rocm_metrics_packages must list Debian package names'),
    ('expected_gpus', -2, 'rocm_metrics_expected_gpus must be -1'),
])
def test_bad_values_are_refused_before_any_change(key, value, message):
    with pytest.raises(PlanError) as caught:
        planner.plan('metrics', NODE, dict(WANTED, **{key: value}), STACK)
    assert message in str(caught.value) and 'Nothing was changed' in str(caught.value)


def test_not_root_is_refused():
    with pytest.raises(PlanError):
        planner.plan('metrics', dict(NODE, os={'euid': 1000}), WANTED, STACK)


def test_the_shipped_writer_runs_from_its_own_folder(tmp_path):
    """The files the plan ships, written under a folder, make a writer that runs with nothing else on the path."""
    install = str(tmp_path / 'usr-lib-gpulab-metrics')
    result = planner.plan('metrics', NODE, dict(WANTED, install_dir=install), STACK)
    for path, text in result['files'].items():
        if path.startswith(install):
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, 'w') as handle:
                handle.write(text)
    sysfs = tmp_path / 'sys'
    (sysfs / 'bus' / 'pci' / 'devices').mkdir(parents=True)
    out = tmp_path / 'textfile'
    out.mkdir()
    config = tmp_path / 'metrics.json'
    config.write_text(json.dumps(dict(json.loads(result['files'][plan_metrics.CONFIG]), textfile_dir=str(out),
                                      sysfs_root=str(sysfs), root=str(tmp_path))))
    cli = tmp_path / 'cli'
    cli.write_text(result['executables'][plan_metrics.CLI])
    run = subprocess.run([sys.executable, '-S', '-I', str(cli), '--config', str(config)], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, check=False)
    assert run.returncode == 0, run.stdout.decode()
    text = (out / 'gpulab.prom').read_text()
    assert 'gpulab_gpus_found{source="pci"} 0\n' in text and 'gpulab_gpus_expected{source="pci"} 2\n' in text
