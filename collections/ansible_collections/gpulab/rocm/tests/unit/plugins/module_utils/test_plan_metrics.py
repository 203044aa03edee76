# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_metrics: what rocm_metrics writes, from a probe and its variables; the shipped writer runs on its own; AMD's
exporter on the Instinct fixture trees of the hardware scenario, skipped on the Radeon, APU and GPU-less ones."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest
import yaml

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import amd_exporter_fields, plan_metrics, planner
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.tests.unit.sysfs_tree import add_function, build

WANTED = {'enabled': True, 'packages': ['prometheus-node-exporter'], 'collectors': ['drm', 'hwmon', 'textfile'],
          'textfile_dir': '/var/lib/prometheus/node-exporter', 'listen_address': ':9100', 'interval': '1min',
          'node_class': 'mi200_nodes', 'expected_gpus': -1, 'install_dir': '/usr/lib/gpulab/python',
          'health_file': '/var/lib/gpulab/health/last.json', 'rocm_path': '/opt/rocm', 'sysfs_root': '/sys'}
STACK = {'expected_gpu_count': -1, 'install_source': 'amd', 'version': '6.2.4'}
NODE = {'os': {'euid': 0, 'systemd': True}, 'packages': {'prometheus-node-exporter': ['ii', '1.5.0-1+b6']},
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


def test_the_stack_count_sets_the_expectation():
    # The one count rule (gpu_count.expected); the stack-wide count counts rocminfo agents: the KFD series takes it,
    # the PCI series the rule without it (the bus's 2 here).
    result = planner.plan('metrics', NODE, WANTED, dict(STACK, expected_gpu_count=8))
    config = json.loads(result['files'][plan_metrics.CONFIG])
    assert (config['expected_pci'], config['expected_kfd']) == (2, 8)
    assert result['notices'] == ["gpulab_gpus_expected: 8 AMD GPU(s) expected (rocm_expected_gpu_count), the PCI bus "
                                 "shows 2 now: the expectation stays (a GPU that fell off the bus does not lower it); "
                                 "lowering it is the admin's decision: set rocm_expected_gpu_count (every role) or "
                                 "rocm_metrics_expected_gpus (this role)"]


def test_no_systemd_is_said():
    # The probe's os.systemd: whether /run/systemd/system exists (a container has none).
    result = planner.plan('metrics', dict(NODE, os={'euid': 0, 'systemd': False}), WANTED, STACK)
    assert not result['systemd'] and 'systemd does not run this host' in result['notices'][0]
    assert planner.plan('metrics', NODE, WANTED, STACK)['systemd'] is True


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
    assert result['library'] and not [path for path in result['files'] if path.startswith(install)]
    for path, text in result['library'].items():
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


# AMD's exporter ---------------------------------------------------------------------------------------------------

# tests/unit/plugins/module_utils -> the repository root, where roles/ and molecule/ live beside collections/
PROJECT = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *(['..'] * 8)))
HARDWARE = os.path.join(PROJECT, 'molecule', 'hardware', 'sysfs')
ROLE_DEFAULTS = os.path.join(PROJECT, 'roles', 'rocm_metrics', 'defaults', 'main.yml')
# The role's defaults for AMD's exporter, as a lab that only turns it on gets them.
AMD = dict(WANTED, amd_exporter=True, amd_exporter_fields=['GPU_NODES_TOTAL', 'GPU_EDGE_TEMPERATURE',
                                                           'GPU_JUNCTION_TEMPERATURE', 'GPU_POWER_USAGE',
                                                           'GPU_GFX_ACTIVITY', 'GPU_TOTAL_VRAM', 'GPU_USED_VRAM',
                                                           'PCIE_SPEED', 'PCIE_MAX_SPEED', 'GPU_ECC_CORRECT_TOTAL',
                                                           'GPU_ECC_UNCORRECT_TOTAL', 'GPU_ECC_UNCORRECT_UMC'],
           amd_exporter_labels=['GPU_UUID', 'SERIAL_NUMBER', 'CARD_MODEL', 'DRIVER_VERSION', 'VBIOS_VERSION'],
           amd_exporter_custom_labels={}, amd_exporter_port=5000)


def hardware_node(tmp_path, spec, packages=None):
    """The node with the PCI facts the real reader gives over a fixture tree of the hardware scenario
    (molecule/hardware/sysfs/SPEC)."""
    if not os.path.isdir(HARDWARE):
        pytest.skip('the hardware scenario (molecule/) is not beside this collection')
    sysfs = str(tmp_path / 'sys')
    with open(os.path.join(HARDWARE, spec)) as handle:
        build(sysfs, json.load(handle))
    return dict(NODE, packages=dict(NODE['packages'], **(packages or {})),
                gpu_pci=gather_pci(sysfs, str(tmp_path), str(tmp_path)))


def apu_node(tmp_path):
    """TEST FIXTURE: a Radeon 780M (Phoenix APU, 0x15bf), as test_metrics_textfile builds it."""
    sysfs = str(tmp_path / 'sys')
    add_function(sysfs, ['pci0000:00', '0000:00:08.1', '0000:c3:00.0'], cls='0x030000', vendor='0x1002',
                 device='0x15bf', driver='amdgpu', drm=['card0', 'renderD128'])
    return dict(NODE, gpu_pci=gather_pci(sysfs, str(tmp_path), str(tmp_path)))


def test_the_role_defaults_are_amds_names():
    if not os.path.exists(ROLE_DEFAULTS):
        pytest.skip('the rocm_metrics role is not beside this collection')
    with open(ROLE_DEFAULTS) as handle:
        defaults = yaml.safe_load(handle)
    assert dict((key, AMD[key]) for key in AMD if key.startswith('amd_exporter_')) == dict(
        (key[len('rocm_metrics_'):], value) for key, value in defaults.items()
        if key.startswith('rocm_metrics_amd_exporter_') and key != 'rocm_metrics_amd_exporter_enabled')
    assert plan_metrics.check_amd_exporter(AMD) == []


@pytest.mark.parametrize('key, value, message', [
    # oci-hpc's config.json has this one: AMD's exporter ignores it silently.
    ('amd_exporter_fields', ['GPU_GFX_ACTIVITY', 'PCIE_NAC_RECEIVED_COUNT'],
     "rocm_metrics_amd_exporter_fields: 'PCIE_NAC_RECEIVED_COUNT' is not one of AMD's GPU metric field names "
     "(ROCm/device-metrics-exporter pkg/exporter/proto/exporterconfig.proto at "
     "afd0fe81cfb1a36cf15e79edb057e92adb197946); the nearest is 'PCIE_NACK_RECEIVED_COUNT'"),
    ('amd_exporter_fields', ['gpu_gfx_activity'], "the nearest is 'GPU_GFX_ACTIVITY'"),
    ('amd_exporter_labels', ['GPU_UID'], "rocm_metrics_amd_exporter_labels: 'GPU_UID' is not one of AMD's label "
                                         "names"),
    ('amd_exporter_custom_labels', {'hostname': 'x'}, "'hostname' must be a lower-case Prometheus label name"),
    ('amd_exporter_custom_labels', {'Rack': 'r1'}, "'Rack' must be a lower-case Prometheus label name"),
    ('amd_exporter_custom_labels', {'rack': 'r1\n'}, "the value of 'rack' must be up to 128"),
    ('amd_exporter_custom_labels', dict(('l%d' % n, 'v') for n in range(11)), 'takes at most 10, not 11'),
    ('amd_exporter_port', 9100, "rocm_metrics_amd_exporter_port 9100 is node_exporter's port"),
    ('amd_exporter_port', '5000', 'rocm_metrics_amd_exporter_port must be a TCP port'),
])
def test_bad_exporter_values_are_refused_before_any_change(tmp_path, key, value, message):
    """Refused on any node, Instinct or not: the same inventory value is wrong everywhere."""
    with pytest.raises(PlanError) as caught:
        planner.plan('metrics', hardware_node(tmp_path, 'mi250x-node-one-x8-link.json'), dict(AMD, **{key: value}),
                     STACK)
    assert message in str(caught.value) and 'Nothing was changed' in str(caught.value)


def test_an_unknown_name_far_from_any_gets_no_guess():
    assert plan_metrics.check_amd_exporter(dict(AMD, amd_exporter_fields=['FAN_RPM'])) == [
        "rocm_metrics_amd_exporter_fields: 'FAN_RPM' is not one of AMD's GPU metric field names (%s)"
        % amd_exporter_fields.SOURCE]


def test_off_by_default_nothing_of_amds():
    result = planner.plan('metrics', NODE, dict(AMD, amd_exporter=False), STACK)
    assert result['amd_exporter_query'] == [] and amd_exporter_fields.CONFIG_FILE not in result['files']
    assert result['services'] == ['gpulab-metrics.timer', 'prometheus-node-exporter']


def test_an_instinct_node_asks_apt_first(tmp_path):
    result = planner.plan('metrics', hardware_node(tmp_path, 'mi250x-node-one-x8-link.json'), AMD, STACK)
    assert result['amd_exporter_query'] == ['amdgpu-exporter']
    assert result['changes'] == []  # asking changes nothing (a change in the plan pass would drain a Slurm node)
    assert amd_exporter_fields.CONFIG_FILE not in result['files'] and 'amdgpu-exporter' not in result['install']


def test_offered_it_is_installed_configured_and_started(tmp_path):
    node = dict(hardware_node(tmp_path, 'mi250x-node-one-x8-link.json'),
                candidates={'amdgpu-exporter': ['1.5.2~22.04']})
    result = planner.plan('metrics', node, dict(AMD, amd_exporter_custom_labels={'rack': 'r12'}), STACK)
    assert result['install'] == ['amdgpu-exporter'] and result['amd_exporter_query'] == []
    assert result['services'] == ['gpulab-metrics.timer', 'prometheus-node-exporter', 'amd-metrics-exporter']
    assert '/etc/metrics' in result['dirs']
    config = json.loads(result['files']['/etc/metrics/config.json'])
    assert config == {'ServerPort': 5000, 'GPUConfig': {'Fields': AMD['amd_exporter_fields'],
                                                        'Labels': AMD['amd_exporter_labels'],
                                                        'CustomLabels': {'rack': 'r12'}}}


def test_not_offered_is_a_note_not_a_failure(tmp_path):
    node = dict(hardware_node(tmp_path, 'mi250x-node-one-x8-link.json'), candidates={'amdgpu-exporter': []})
    result = planner.plan('metrics', node, AMD, STACK)
    assert 'amdgpu-exporter' not in result['install'] and amd_exporter_fields.CONFIG_FILE not in result['files']
    assert 'no configured apt source offers amdgpu-exporter' in result['notices'][-1]


def test_installed_it_is_configured_without_asking_apt(tmp_path):
    node = hardware_node(tmp_path, 'mi250x-node-one-x8-link.json', {'amdgpu-exporter': ['ii', '1.5.2~22.04']})
    result = planner.plan('metrics', node, dict(AMD, amd_exporter_fields=[]), STACK)
    assert result['amd_exporter_query'] == [] and result['install'] == [] and result['changes'] == []
    assert json.loads(result['files']['/etc/metrics/config.json'])['GPUConfig']['Fields'] == []


@pytest.mark.parametrize('spec, names', [
    ('navi22-nvidia-workstation.json', 'AMD Radeon RX 6700 / 6700 XT / 6750 XT / 6800M (gfx1031) is'),
    ('mixed-navi21-navi23-kfd.json', 'AMD Radeon RX 6600 / 6600 XT (gfx1032), AMD Radeon RX 6800 / 6800 XT / '
                                     '6900 XT (gfx1030) are'),
])
def test_radeon_nodes_are_skipped_with_the_reason(tmp_path, spec, names):
    result = planner.plan('metrics', hardware_node(tmp_path, spec), AMD, STACK)
    assert result['amd_exporter_query'] == [] and amd_exporter_fields.CONFIG_FILE not in result['files']
    assert result['services'] == ['gpulab-metrics.timer', 'prometheus-node-exporter']
    assert result['notices'] == [
        "AMD's exporter (rocm_metrics_amd_exporter_enabled) is skipped: %s not an Instinct MI2xx/MI3xx, the GPUs the "
        "role installs it for (AMD's metrics-support-matrix.yaml; AMD closed APU support as wontfix, "
        "ROCm/device-metrics-exporter issue 281, and lists \"Radeon AI\" cards only from ROCm 7.13). The gpulab_* "
        "textfile and node_exporter's drm collector cover this node." % names]


def test_an_apu_is_skipped(tmp_path):
    result = planner.plan('metrics', apu_node(tmp_path), AMD, STACK)
    assert 'AMD Radeon 780M / 760M (Phoenix) (gfx1103) is not an Instinct MI2xx/MI3xx' in result['notices'][0]
    assert result['amd_exporter_query'] == []


def test_a_node_without_gpu_is_skipped(tmp_path):
    result = planner.plan('metrics', hardware_node(tmp_path, 'build-node-no-gpu.json'), AMD, STACK)
    assert "is skipped: the node has no AMD GPU" in result['notices'][0] and result['amd_exporter_query'] == []


def test_a_virtual_function_is_skipped():
    node = dict(NODE, gpu_pci={'amd': [{'bdf': '0000:00:08.0', 'gfx_target': 'gfx942', 'sriov_vf': True,
                                        'name': 'AMD Instinct MI300X VF'}]})
    result = planner.plan('metrics', node, AMD, STACK)
    assert '0000:00:08.0 is an SR-IOV virtual function' in result['notices'][0]
