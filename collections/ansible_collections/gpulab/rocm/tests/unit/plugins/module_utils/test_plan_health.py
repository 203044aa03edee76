# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""plan_health: what rocm_health installs, where the expected values come from, and that the copied program runs
on its own (no Ansible on its path)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import node_code, plan_common, plan_health, planner

WANTED = dict(node_class='', node_classes={}, gpu_models={}, gpu_count=-1, link_policy='fail', aer_correctable='warn',
              max_uncorrectable_ecc=0, max_pending_bad_pages=0, rocminfo_timeout=20, amd_smi_timeout=15,
              resume_limit=3, resume_window_hours=24,
              kfd_group='render', render_group='render', sysfs_root='/sys', dev_root='/dev',
              kernel_log_source='auto', kernel_log_max_bytes=4194304, kernel_log_hold_hours=72,
              kernel_log_reset_loop_count=3, kernel_log_reset_loop_minutes=60, kernel_log_extra_rules=[])
NODE = {'os': {'euid': 0}, 'gpu_pci': {'amd_count': 8}, 'paths': {}}
STACK = {'expected_gpu_count': -1}


def plan(node=None, stack=None, **wanted):
    return planner.plan('health', node or NODE, dict(WANTED, **wanted), stack or STACK)


def test_the_installed_program_runs_alone(tmp_path):
    lib = str(tmp_path / 'lib')
    for path, content in plan_health.library_files().items():
        target = lib + path[len(plan_health.LIB):]
        os.makedirs(os.path.dirname(target), exist_ok=True)
        with open(target, 'w') as handle:
            handle.write(content)
    entry = tmp_path / 'gpulab-gpu-health'
    entry.write_text(plan_health.ENTRY.replace(repr(plan_health.LIB), repr(lib)))
    data = tmp_path / 'health.json'
    data.write_text(json.dumps({'sysfs_root': str(tmp_path / 'nosys')}))
    # -I as the shebang says: no PYTHONPATH, so the venv's collections/ and Ansible are not what it imports
    done = subprocess.run([sys.executable, '-I', str(entry), '--json', '--data', str(data), '--state-dir',
                           str(tmp_path / 'state')], capture_output=True, text=True, timeout=60, check=False)
    result = json.loads(done.stdout)
    assert done.returncode == 2 and result['verdict'] == 'error'  # no sysfs there: it could not run
    assert 'nosys' in result['checks'][0]['reason']
    # the prolog entry: the same check, exit 1 (slurmd refuses the job), its refusal recorded; no Slurm call
    prolog = tmp_path / 'gpulab-slurm-prolog'
    prolog.write_text(plan_health.PROLOG_ENTRY.replace(repr(plan_health.LIB), repr(lib)))
    done = subprocess.run([sys.executable, '-I', str(prolog), '--data', str(data), '--state-dir',
                           str(tmp_path / 'state')], capture_output=True, text=True, timeout=60, check=False,
                          env={'SLURM_JOB_ID': '7', 'SLURMD_NODENAME': 'n1', 'PATH': '/nonexistent'})
    assert done.returncode == 1 and 'job 7 refused on node n1: gpulab: health: HEALTH_DATA' in done.stderr, done
    assert json.loads((tmp_path / 'state' / 'prolog.json').read_text())['job'] == '7'
    probe = subprocess.run([sys.executable, '-I', '-c', 'import sys; sys.path.insert(0, %r); '
                            'from ansible_collections.gpulab.rocm.plugins.module_utils.node import health_run; '
                            'print(health_run.__file__); '
                            'print(sorted(m for m in sys.modules if m == "ansible" or m.startswith("ansible.")))'
                            % lib], capture_output=True, text=True, timeout=60, check=False)
    assert probe.stdout.splitlines() == [lib + '/' + node_code.PACKAGE + '/node/health_run.py', '[]']


def test_the_gpu_count_comes_from_the_class_the_role_the_stack_the_record_or_the_bus():
    assert plan()['data']['gpu_count'] == 8 and plan()['count_source'] == 'the GPUs on the bus now'
    lost = dict(NODE, gpu_pci={'amd_count': 7}, health_recorded_gpu_count=8)
    kept = plan(node=lost)
    assert kept['data']['gpu_count'] == 8 and kept['count_source'] == 'the count recorded at the first provisioning'
    assert kept['notices'] == ['the health check: 8 AMD GPU(s) expected (the count recorded at the first '
                               'provisioning), the PCI bus shows 7 now: the expectation stays (a GPU that fell off '
                               'the bus does not lower it); lowering it is the admin\'s decision: set '
                               'rocm_expected_gpu_count (every role) or rocm_health_gpu_count or the node class\'s '
                               'gpu_count (this role)']
    assert plan(stack={'expected_gpu_count': 4})['data']['gpu_count'] == 4
    assert plan(stack={'expected_gpu_count': 4}, gpu_count=2)['data']['gpu_count'] == 2
    classes = {'mi300x-8': {'gpu_count': 8, 'link_policy': 'warn'}}
    chosen = plan(node_class='mi300x-8', node_classes=classes, gpu_count=2)
    assert chosen['data']['gpu_count'] == 8 and chosen['data']['link_policy'] == 'warn'
    assert chosen['data']['node_class'] == 'mi300x-8'


def test_bad_classes_and_values_are_refused_by_name():
    with pytest.raises(plan_common.PlanError, match="rocm_health_node_class is 'mi250', which"):
        plan(node_class='mi250')
    with pytest.raises(plan_common.PlanError, match='cannot set: sysfs_root'):
        plan(node_class='x', node_classes={'x': {'sysfs_root': '/tmp'}})
    with pytest.raises(plan_common.PlanError, match='link_policy must be one of fail, warn'):
        plan(link_policy='ignore')
    with pytest.raises(plan_common.PlanError, match='PCI device id'):
        plan(gpu_models={'MI300X': {'link_width': 16}})


def test_a_converged_node_changes_nothing():
    first = plan()
    # The code apart from the data file: the role writes the code without a diff.
    assert list(first['files']) == [plan_health.DATA] and plan_health.DATA not in first['library']
    assert set(first['library']) == set(plan_health.library_files())
    files = dict(first['files'], **first['library'])
    paths = dict((path, {'type': 'file', 'sha1': plan_common.sha1(content), 'mode': '0644', 'uid': 0, 'gid': 0})
                 for path, content in files.items())
    for path, text in ((plan_health.PROGRAM, plan_health.ENTRY), (plan_health.SLURM_PROGRAM, plan_health.SLURM_ENTRY),
                       (plan_health.PROLOG_PROGRAM, plan_health.PROLOG_ENTRY)):
        paths[path] = {'type': 'file', 'sha1': plan_common.sha1(text), 'mode': '0755', 'uid': 0, 'gid': 0}
    paths.update((path, {'type': 'directory', 'mode': '0755', 'uid': 0}) for path in plan_health.folders())
    again = plan(node=dict(NODE, paths=paths))
    assert (again['changes'], again['files'], again['library'], again['scripts'], again['folders']) == \
        ([], {}, {}, {}, [])
    assert len(first['changes']) == len(plan_health.folders()) + len(files) + 3
    # A folder someone made group-writable is a change of its own (the role is not skipped on it).
    loose = dict(paths, **{plan_health.STATE_DIR: {'type': 'directory', 'mode': '0775', 'uid': 0}})
    fixed = plan(node=dict(NODE, paths=loose))
    assert fixed['folders'] == [plan_health.STATE_DIR] and len(fixed['changes']) == 1


def test_the_planner_asks_the_probe_for_the_installed_files():
    needs = planner.probe_needs('health', {'sections': ['os', 'gpus', 'health']}, WANTED, STACK)
    assert needs['sections'] == ['paths'] and plan_health.PROGRAM in needs['paths']
    assert plan_health.DATA in needs['paths']
    # A whole probe describes them already (planner.probe_paths, the action's first read): no second read.
    described = dict((path, {'type': None}) for path in planner.probe_paths())
    assert planner.probe_needs('health', {'sections': ['os', 'gpus', 'health', 'paths'], 'paths': described},
                               WANTED, STACK) is None


def test_the_role_has_work_on_every_run_where_it_runs_the_check():
    converged = {'changes': [], 'notices': []}
    assert planner.has_work('health', converged, dict(WANTED, run=True))
    assert not planner.has_work('health', converged, dict(WANTED, run=False))
    assert not planner.has_work('health', dict(converged, notices=['expects 8 GPU(s)']), dict(WANTED, run=False))


def test_the_kernel_log_variables_reach_the_data_file_and_bad_ones_are_named():
    rules = [{'code': 'KLOG_SITE_PPT_LIMIT', 'severity': 'warn', 'pattern': "Couldn't get PPT limit"}]
    data = plan(kernel_log_source='/var/log/gpulab-fixture-kern.log', kernel_log_hold_hours='0',
                kernel_log_extra_rules=rules)['data']
    assert (data['kernel_log_source'], data['kernel_log_hold_hours'], data['kernel_log_extra_rules']) == (
        '/var/log/gpulab-fixture-kern.log', 0, rules)
    assert data['kernel_log_max_bytes'] == 4194304 and data['kernel_log_reset_loop_count'] == 3
    for wanted, words in (({'kernel_log_source': 'syslog'}, 'rocm_health_kernel_log_source must be auto, journal'),
                          ({'kernel_log_max_bytes': 100}, 'rocm_health_kernel_log_max_bytes must be a whole number'),
                          ({'kernel_log_reset_loop_minutes': 'ten'}, 'rocm_health_kernel_log_reset_loop_minutes must '
                                                                     'be a whole number, got'),
                          ({'kernel_log_extra_rules': [{'code': 'KLOG_X', 'severity': 'warn', 'pattern': '('}]},
                           r'rocm_health_kernel_log_extra_rules\[0\]: pattern')):
        with pytest.raises(plan_common.PlanError, match=words):
            plan(**wanted)
    # a wanted state without them (an older caller): the defaults
    older = dict((key, value) for key, value in WANTED.items() if not key.startswith('kernel_log_'))
    assert planner.plan('health', NODE, older, STACK)['data']['kernel_log_source'] == 'auto'
