# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Issue 36: one expected-GPU-count rule (planning/gpu_count.py) for rocm_verify, rocm_health, rocm_metrics and the
fleet report: the same inputs give all four the same count; a GPU that fell off the bus never lowers it; an explicit
lower count does, and the plan says it was the admin's decision."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import json
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_count, plan_metrics, planner, stack

FIXTURES = os.path.join(os.path.dirname(__file__), "fixtures")
HEALTH = dict(node_class='', node_classes={}, gpu_models={}, gpu_count=-1, link_policy='fail', aer_correctable='warn',
              max_uncorrectable_ecc=0, max_pending_bad_pages=0, rocminfo_timeout=20, amd_smi_timeout=15,
              resume_limit=3, resume_window_hours=24, kfd_group='render', render_group='render', sysfs_root='/sys',
              dev_root='/dev')
METRICS = {'enabled': True, 'packages': ['prometheus-node-exporter'], 'collectors': ['drm', 'hwmon', 'textfile'],
           'textfile_dir': '/var/lib/prometheus/node-exporter', 'listen_address': ':9100', 'interval': '1min',
           'node_class': '', 'expected_gpus': -1, 'install_dir': '/usr/lib/gpulab/python',
           'health_file': '/var/lib/gpulab/health/last.json', 'rocm_path': '/opt/rocm', 'sysfs_root': '/sys'}
MI250X = {"bdf": "0000:d1:00.0", "vendor": "AMD", "name": "Aldebaran/MI200 [Instinct MI250X]", "gfx_target": "gfx90a",
          "driver": "amdgpu", "sriov_vf": False, "link": {}}


def node(recorded=None):
    """The converged probe (rocminfo lists the MI250X at d1:00.0) with that GPU on the bus and in KFD; recorded: the
    count the health data file holds (the probe's section health)."""
    with open(os.path.join(FIXTURES, "probe", "bookworm-converged-rocm6.2.4-fixture-tools-mi250x.json")) as handle:
        probe = json.load(handle)
    probe["gpu_pci"].update(devices=[MI250X], amd=[MI250X], amd_count=1, kfd_gpu_nodes=1, kfd_physical_gpus=1)
    probe["os"].update(euid=0, systemd=True)
    if recorded is not None:
        probe["sections"].append("health")
        probe["health_recorded_gpu_count"] = recorded
    return probe


def inputs(**values):
    return stack.resolve(dict({"rocm_gpu_users": ["alice"], "rocm_version": "6.2.4"}, **values))


def all_four(probe, stack_inputs, health=None, metrics=None):
    """What each consumer expects, and the notices and problems it gives, from the same inputs."""
    health_plan = planner.plan('health', copy.deepcopy(probe), dict(HEALTH, **(health or {})), stack_inputs)
    metrics_plan = planner.plan('metrics', copy.deepcopy(probe), dict(METRICS, **(metrics or {})), stack_inputs)
    verify = planner.plan('verify', copy.deepcopy(probe), {'expected_gfx_targets': []}, stack_inputs, {'name': 'n1'})
    report = planner.plan('report', copy.deepcopy(probe), {}, stack_inputs, {'name': 'n1'})
    return {'health': health_plan, 'metrics': metrics_plan, 'verify': verify, 'report': report['record'],
            'counts': (health_plan['data']['gpu_count'], metrics_plan['config']['expected_pci'])}


def test_the_same_inputs_give_all_four_the_same_count():
    # Nothing set, nothing recorded: the GPUs on the bus now, for all four.
    seen = all_four(node(), inputs())
    assert seen['counts'] == (1, 1) and seen['metrics']['config']['expected_kfd'] == 1
    assert seen['verify']['problems'] == [] and seen['report']['problems'] == []
    assert gpu_count.expected(node(), inputs())['count'] == 1
    # The stack-wide count counts rocminfo agents: health, verify, the report and the metrics' KFD series take it;
    # the metrics' PCI series keeps the rule without it (the PCI functions: a partitioned GPU is several agents).
    two = all_four(node(), inputs(rocm_expected_gpu_count=2))
    assert two['counts'] == (2, 1) and two['metrics']['config']['expected_kfd'] == 2
    assert two['verify']['problems'] == ['rocminfo lists 1 GPU agent(s), expected 2 (rocm_expected_gpu_count)']
    assert two['report']['problems'] == ['1 AMD GPU(s) found, the inventory expects 2 (rocm_expected_gpu_count)']


def test_a_node_now_showing_fewer_gpus_than_recorded_keeps_the_recorded_count_with_a_notice():
    # The health data file recorded 2; the bus shows 1 now. Health used to keep 2 and metrics to take 1.
    seen = all_four(node(recorded=2), inputs())
    assert seen['counts'] == (2, 2)
    assert seen['health']['count_source'] == gpu_count.RECORDED
    assert seen['metrics']['config']['expected_kfd'] == 2  # the agents KFD lists now plus the missing GPU's
    notice = ("2 AMD GPU(s) expected (the count recorded at the first provisioning), the PCI bus shows 1 now: the "
              "expectation stays (a GPU that fell off the bus does not lower it); lowering it is the admin's "
              "decision: set rocm_expected_gpu_count (every role) or %s (this role)")
    assert seen['health']['notices'] == [
        'the health check: ' + notice % "rocm_health_gpu_count or the node class's gpu_count"]
    assert seen['metrics']['notices'] == ['gpulab_gpus_expected: ' + notice % 'rocm_metrics_expected_gpus']
    problem = ("the PCI bus shows 1 AMD GPU(s), 2 expected (the count recorded at the first provisioning, in the "
               "health data file): a GPU fell off the bus (dmesg | grep -i amdgpu; lspci -d 1002:); the expectation "
               "stays, lowering it is the admin's decision: set rocm_expected_gpu_count")
    assert seen['verify']['problems'] == [problem]
    assert seen['report']['problems'] == [problem]
    # A GPU added raises it; the count recorded when the bus shows as many is the bus's.
    assert gpu_count.expected(node(recorded=0), inputs())['source'] == gpu_count.FOUND
    assert all_four(node(recorded=1), inputs())['counts'] == (1, 1)


def test_an_explicit_lower_count_lowers_it_as_the_admin_s_decision():
    lowered = all_four(node(recorded=2), inputs(), health={'gpu_count': 1}, metrics={'expected_gpus': 1})
    assert lowered['counts'] == (1, 1) and lowered['metrics']['config']['expected_kfd'] == 1
    assert lowered['health']['count_source'] == 'rocm_health_gpu_count'
    assert lowered['health']['notices'] == [
        'the health check: rocm_health_gpu_count lowers the expected GPU count to 1 (the PCI bus shows 1, the health '
        "data file recorded 2): the admin's decision"]
    assert lowered['metrics']['notices'] == [
        'gpulab_gpus_expected: rocm_metrics_expected_gpus lowers the expected GPU count to 1 (the PCI bus shows 1, '
        "the health data file recorded 2): the admin's decision"]
    # The stack-wide count lowers it for health, verify, the report and the metrics' KFD series (the PCI series keeps
    # the recorded 2: rocm_expected_gpu_count counts rocminfo agents).
    stack_wide = all_four(node(recorded=2), inputs(rocm_expected_gpu_count=1))
    assert stack_wide['counts'] == (1, 2) and stack_wide['metrics']['config']['expected_kfd'] == 1
    assert stack_wide['verify']['problems'] == [] and stack_wide['report']['problems'] == []
    assert "rocm_expected_gpu_count lowers the expected GPU count to 1" in stack_wide['health']['notices'][0]
    # A node class's count is rocm_health's override too, before rocm_health_gpu_count.
    classes = {'mi250x-1': {'gpu_count': 1}}
    chosen = all_four(node(recorded=2), inputs(), health={'node_class': 'mi250x-1', 'node_classes': classes,
                                                          'gpu_count': 3})
    assert chosen['health']['data']['gpu_count'] == 1 and chosen['health']['count_source'] == 'the node class'


@pytest.mark.parametrize('override, stack_count, recorded, found, count, source', [
    (-1, -1, None, 4, 4, gpu_count.FOUND),
    (-1, -1, 8, 7, 8, gpu_count.RECORDED),
    (-1, -1, 8, 9, 9, gpu_count.FOUND),
    (-1, 6, 8, 7, 6, gpu_count.STACK),
    (5, 6, 8, 7, 5, 'the override'),
    (0, 6, 8, 7, 0, 'the override'),
    (-1, 0, None, 2, 0, gpu_count.STACK),
])
def test_the_precedence(override, stack_count, recorded, found, count, source):
    probe = {'gpu_pci': {'amd_count': found}, 'health_recorded_gpu_count': recorded}
    rule = gpu_count.expected(probe, {'expected_gpu_count': stack_count}, override, override_source='the override')
    assert (rule['count'], rule['source'], rule['found']) == (count, source, found)
    assert rule['configured'] is (source in (gpu_count.STACK, 'the override'))
    # Never lowered without a notice that says so.
    assert bool(rule['notices']) is (count != found or (recorded or 0) > count)


def test_metrics_validates_its_override_before_the_rule():
    assert plan_metrics.check(dict(METRICS, expected_gpus=True)) == [
        'rocm_metrics_expected_gpus must be -1 (what the node shows now) or a count, not True']
