# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The removal plans (state absent) of rocm_health, rocm_metrics and rocm_containers: on a tree that holds what the
present plans write (their real contents), described by the probe's own reader, the removal takes every file of ours
away, leaves the lab's and the users' own, shares the node code until its last user goes, and plans nothing more
once applied."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.host import node_state as ns
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import (
    node_code, plan_containers, plan_health, plan_metrics, plan_pass, planner,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError

from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.test_plan_containers import DOCKER, LAB, SPEC, converge, docker_node, gpu_node, inputs
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.test_plan_health import STACK as HEALTH_STACK, WANTED as HEALTH_WANTED
from ansible_collections.gpulab.rocm.tests.unit.plugins.module_utils.test_plan_metrics import STACK as METRICS_STACK, WANTED as METRICS_WANTED

METRICS = dict(METRICS_WANTED, install_dir=node_code.LIB)
GPU_NODE = {'os': {'euid': 0, 'systemd': True}, 'packages': {'prometheus-node-exporter': ['ii', '1.5.0-1+b6']},
            'gpu_pci': {'amd': [{'bdf': '0000:c1:00.0'}], 'amd_count': 1, 'kfd_gpu_nodes': 1}, 'paths': {}}


def write(root, path, text, mode=0o644):
    target = root + path
    os.makedirs(os.path.dirname(target), exist_ok=True)
    with open(target, 'w') as handle:
        handle.write(text)
    os.chmod(target, mode)


def install(root, health=True, metrics=True):
    """What the present plans write, under root: their own contents, folders, scripts, the check's state."""
    if health:
        done = planner.plan('health', GPU_NODE, dict(HEALTH_WANTED, run=True), HEALTH_STACK)
        for path in done['folders']:
            os.makedirs(root + path, exist_ok=True)
        for path, text in list(done['library'].items()) + list(done['files'].items()):
            write(root, path, text)
        for path, text in done['scripts'].items():
            write(root, path, text, 0o755)
        write(root, plan_health.STATE_DIR + '/last.json', '{"verdict": "healthy"}\n')
        # Python's own cache of the code, as root's runs leave it
        write(root, node_code.LIB + '/' + node_code.PACKAGE + '/node/__pycache__/health.cpython-312.pyc', 'x')
    if metrics:
        done = planner.plan('metrics', GPU_NODE, METRICS, METRICS_STACK)
        for path in done['dirs']:
            os.makedirs(root + path, exist_ok=True)
        for path, text in list(done['library'].items()) + list(done['files'].items()):
            write(root, path, text)
        for path, text in done['executables'].items():
            write(root, path, text, 0o755)
        write(root, METRICS['textfile_dir'] + '/gpulab.prom', 'gpulab_gpus 1\n')


def probe(root, node, phase, wanted):
    """The node with every path the phase needs described by the probe's reader (node_state.describe_file)."""
    paths = dict(node.get('paths') or {})
    needs = planner.probe_needs(phase, dict(node, paths=paths, sections=['os', 'paths']), wanted, {}) or {}
    for path in needs.get('paths') or []:
        paths[path] = ns.describe_file(root + path, with_content=False)
    return dict(node, paths=paths)


def fresh(root):
    """A node read anew (the next run)."""
    node = dict(GPU_NODE, paths={})
    return dict(node, paths=dict((path, ns.describe_file(root + path, with_content=False))
                                 for path in planner.probe_paths()))


def apply(root, plan):
    """What the role's absent.yml does: unlink, remove trees, then rmdir each pruned folder that is empty."""
    remove = plan['remove']
    for path in remove['files']:
        os.unlink(root + path)
    for path in remove['trees']:
        shutil.rmtree(root + path)
    for path in remove['prune']:
        if os.path.isdir(root + path) and not os.listdir(root + path):
            os.rmdir(root + path)


def left(root):
    found = []
    for top, dirs, files in os.walk(root):
        found += [os.path.join(top, name)[len(root):] for name in dirs + files]
    return sorted(found)


def uninstall(root, phases=('health', 'metrics')):
    """The plan pass of playbooks/uninstall.yml (health before metrics), then each role applies its plan."""
    node, plans = fresh(root), {}
    wanted = {'health': dict(HEALTH_WANTED, state='absent', run=True), 'metrics': dict(METRICS, state='absent')}
    for phase in phases:
        node = probe(root, node, phase, wanted[phase])
        plans[phase] = planner.plan(phase, node, wanted[phase], HEALTH_STACK if phase == 'health' else METRICS_STACK)
        node['pass'] = plan_pass.record(node.get('pass'), phase, [c['change'] for c in plans[phase]['changes']])
    for phase in phases:
        apply(root, plans[phase])
    return plans


def test_uninstall_removes_every_file_of_ours_and_keeps_the_labs(tmp_path):
    root = str(tmp_path)
    install(root)
    # The lab's own: a file of its own in /etc/gpulab, node_exporter's own textfile beside ours.
    write(root, '/etc/gpulab/site-notes.txt', 'ours, not the role\'s\n')
    write(root, METRICS['textfile_dir'] + '/lab.prom', 'lab_metric 1\n')
    plans = uninstall(root)
    # Left: the lab's file (and its folder), the lab's textfile, and the distribution's folders.
    assert left(root) == sorted([
        '/etc', '/etc/gpulab', '/etc/gpulab/site-notes.txt', '/etc/systemd', '/etc/systemd/system', '/var', '/var/lib',
        '/var/lib/prometheus', '/var/lib/prometheus/node-exporter', '/var/lib/prometheus/node-exporter/lab.prom',
        '/usr', '/usr/lib', '/usr/local', '/usr/local/sbin', '/usr/sbin'])
    health, metrics = plans['health'], plans['metrics']
    assert health['remove']['files'] == [plan_health.PROGRAM, plan_health.SLURM_PROGRAM, plan_health.PROLOG_PROGRAM,
                                         plan_health.DATA]
    assert health['remove']['trees'] == [plan_health.STATE_DIR]
    # The health check goes first: the writer still runs the shared code then; the metrics take it with them.
    assert any(node_code.LIB in notice and 'gpulab-metrics-textfile' in notice for notice in health['notices'])
    assert metrics['remove']['trees'] == [node_code.LIB + '/ansible_collections']
    assert metrics['remove']['units'] == ['gpulab-metrics.timer', 'gpulab-metrics.service']
    assert metrics['remove']['node_exporter'] is True
    assert set(metrics['remove']['files']) == {
        plan_metrics.CLI, plan_metrics.CONFIG, '/etc/systemd/system/gpulab-metrics.service',
        '/etc/systemd/system/gpulab-metrics.timer', plan_metrics.DROPIN_DIR + '/gpulab.conf',
        METRICS['textfile_dir'] + '/gpulab.prom'}
    # Applied: a second run plans nothing (the lab's file keeps /etc/gpulab; no change is claimed for it).
    again = uninstall(root)
    assert (again['health']['changes'], again['metrics']['changes']) == ([], [])
    assert again['health']['notices'] == [] and again['metrics']['remove']['trees'] == []


def test_the_node_code_stays_while_the_other_role_runs_it(tmp_path):
    root = str(tmp_path)
    install(root)
    plans = uninstall(root, phases=('health',))
    assert plans['health']['remove']['trees'] == [plan_health.STATE_DIR]
    assert os.path.isfile(root + plan_metrics.CLI) and os.path.isdir(root + node_code.LIB + '/ansible_collections')
    assert not os.path.exists(root + plan_health.PROGRAM) and not os.path.exists(root + plan_health.DATA)
    # Then the metrics alone, in a later run: now the last user, it removes the code and the emptied folders.
    plans = uninstall(root, phases=('metrics',))
    assert plans['metrics']['remove']['trees'] == [node_code.LIB + '/ansible_collections']
    assert not os.path.exists(root + '/usr/lib/gpulab') and not os.path.exists(root + '/etc/gpulab')
    assert not os.path.exists(root + '/var/lib/gpulab')


def test_metrics_alone_keep_the_code_for_the_health_check(tmp_path):
    root = str(tmp_path)
    install(root)
    plans = uninstall(root, phases=('metrics',))
    assert plans['metrics']['remove']['trees'] == []
    assert any('gpulab-gpu-health' in notice for notice in plans['metrics']['notices'])
    assert os.path.isfile(root + plan_health.PROGRAM) and os.path.isfile(root + plan_health.DATA)
    assert os.path.isdir(root + node_code.LIB + '/' + node_code.PACKAGE + '/node')


def test_nothing_installed_nothing_planned(tmp_path):
    plans = uninstall(str(tmp_path))
    for phase in ('health', 'metrics'):
        assert plans[phase]['changes'] == [] and plans[phase]['remove']['files'] == [], phase
    assert planner.has_work('health', plans['health'], dict(HEALTH_WANTED, state='absent', run=True)) is False


def test_a_folder_where_a_program_should_be_is_refused(tmp_path):
    root = str(tmp_path)
    os.makedirs(root + plan_health.PROGRAM)
    with pytest.raises(PlanError, match='gpulab-gpu-health is a directory.*Nothing was changed'):
        uninstall(root, phases=('health',))


def test_the_metrics_writer_of_health_names_the_same_program():
    assert node_code.CODE_USERS == {'health': (plan_health.PROGRAM, plan_health.SLURM_PROGRAM, plan_health.PROLOG_PROGRAM),
                                    'metrics': (plan_metrics.CLI,)}


def test_a_bad_textfile_folder_is_refused_before_removing():
    with pytest.raises(PlanError, match='rocm_metrics_textfile_dir'):
        planner.plan('metrics', GPU_NODE, dict(METRICS, state='absent', textfile_dir='/var/../etc'), METRICS_STACK)


ABSENT = dict(DOCKER, state='absent', enabled=False)


def test_containers_remove_the_spec_and_only_the_key_the_role_added(tmp_path):
    node = docker_node(tmp_path, LAB)
    converge(node, plan_containers.plan(node, DOCKER, inputs()))
    plan = planner.plan('containers', node, ABSENT, inputs())
    assert plan['remove'] == [SPEC]
    kept = json.loads(plan['daemon_json'][ns.DOCKER_DAEMON_JSON], object_pairs_hook=list)
    assert kept == json.loads(LAB, object_pairs_hook=list)  # the lab's daemon.json as it was, in its order
    # The file's own mode stays; Docker is not restarted.
    assert plan['daemon_json_mode'] == node['containers']['daemon_json']['mode'] and plan['restart_docker'] is False
    assert any('not restarted' in notice for notice in plan['notices'])
    # Applied: nothing more to do.
    node['containers']['cdi_specs'] = {}
    text = plan['daemon_json'][ns.DOCKER_DAEMON_JSON]
    node['containers']['daemon_json'] = dict(node['containers']['daemon_json'], content=text)
    again = planner.plan('containers', node, ABSENT, inputs())
    assert (again['changes'], again['remove'], again['daemon_json']) == ([], [], {})


def test_a_daemon_json_the_role_made_goes_whole(tmp_path):
    node = docker_node(tmp_path)
    converge(node, plan_containers.plan(node, DOCKER, inputs()))
    plan = planner.plan('containers', node, ABSENT, inputs())
    assert plan['remove'] == [SPEC, ns.DOCKER_DAEMON_JSON] and plan['daemon_json'] == {}


def test_a_spec_of_another_kind_and_the_users_subids_stay(tmp_path):
    node = gpu_node(tmp_path)
    node['containers']['cdi_specs'][SPEC] = {'exists': True, 'type': 'file', 'kind': 'nvidia.com/gpu'}
    plan = planner.plan('containers', node, ABSENT, inputs())
    assert plan['changes'] == [] and plan['remove'] == [] and plan['subids'] == []
    assert any('nvidia.com/gpu' in notice for notice in plan['notices'])


def test_containers_removal_reads_its_section_wherever_it_is_off():
    needs = planner.probe_needs('containers', {'sections': ['os', 'gpus', 'packages', 'users']}, ABSENT, inputs())
    assert needs == {'sections': ['containers']}
    # enabled false, present: nothing read
    assert planner.probe_needs('containers', {'sections': ['os', 'gpus', 'packages', 'users']},
                               dict(ABSENT, state='present'), inputs()) is None
