# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.slurm_maintenance run in-process (nothing patched but its exit) against a recording Slurm: scontrol,
sinfo and squeue are one small program on PATH that records its argv and answers with Slurm 22.05's real outputs
(module_utils/fixtures/scontrol), in turn, so that an admin's drain can arrive between the plan and a step. Every
step (drain, wait, reboot, resume) reads the node just before it acts, and leaves an admin's drain alone. Real Slurm
runs these steps in molecule/slurm (tests/test_slurm.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys

import pytest

from ansible_collections.gpulab.rocm.plugins.modules import slurm_maintenance
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import run_main

FIXTURES = os.path.join(os.path.dirname(__file__), '..', 'module_utils', 'fixtures', 'scontrol')

# One program for the three tools: argv to calls.jsonl; the answer is the next of answers.json[tool] (the last one
# again once they are used up): [rc, fixture file name or '' for no output].
TOOL = '''#!%s
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
tool = os.path.basename(sys.argv[0])
with open(os.path.join(here, 'calls.jsonl'), 'a') as log:
    log.write(json.dumps([tool] + sys.argv[1:]) + '\\n')
with open(os.path.join(here, 'answers.json')) as handle:
    answers = json.load(handle)
count = sum(1 for line in open(os.path.join(here, 'calls.jsonl')) if json.loads(line)[0] == tool)
queue = answers.get(tool) or [[0, '']]
rc, name = queue[min(count, len(queue)) - 1]
if name:
    sys.stdout.write(open(os.path.join(%r, name)).read())
sys.exit(rc)
'''


@pytest.fixture
def slurm(tmp_path, monkeypatch):
    """set(answers) -> the folder; calls() -> the recorded [tool, args...] in order."""
    folder = tmp_path / 'slurm-bin'
    folder.mkdir()
    for tool in ('scontrol', 'sinfo', 'squeue'):
        path = folder / tool
        path.write_text(TOOL % (sys.executable, os.path.abspath(FIXTURES)))
        path.chmod(0o755)
    (folder / 'calls.jsonl').write_text('')
    health = tmp_path / 'health'
    health.write_text('#!/bin/sh\necho "gpulab-gpu-health: $GPULAB_FIXTURE_VERDICT"\n'
                      '[ "$GPULAB_FIXTURE_VERDICT" = healthy ]\n')
    health.chmod(0o755)
    monkeypatch.setenv('PATH', '%s:%s' % (folder, os.environ.get('PATH', '/usr/bin:/bin')))
    monkeypatch.setenv('GPULAB_FIXTURE_VERDICT', 'healthy')

    class Slurm(object):
        program = str(health)

        def answers(self, **answers):
            (folder / 'answers.json').write_text(json.dumps(answers))

        def calls(self):
            return [json.loads(line) for line in (folder / 'calls.jsonl').read_text().splitlines()]

        def acted(self):
            """The calls that change Slurm's state (scontrol update, scontrol reboot)."""
            return [call[1:] for call in self.calls() if call[0] == 'scontrol' and call[1] in ('update', 'reboot')]
    return Slurm()


def sinfo(*cases):
    return [[0, 'sinfo-json-22.05-%s.json' % case] for case in cases]


def step(action, check=False, **args):
    return run_main(slurm_maintenance.main, dict(args, action=action, node='gpu01'), check_mode=check)


# --- drain ---------------------------------------------------------------------------------------------------------

def test_drain_reads_the_node_then_drains_it(slurm):
    slurm.answers(sinfo=sinfo('allocated'))
    result = step('drain')
    assert result['changed'] and not result['left_alone'] and not result['failed'], result
    assert slurm.calls() == [['sinfo', '--json', '-n', 'gpu01'],
                             ['scontrol', 'update', 'NodeName=gpu01', 'State=DRAIN',
                              'Reason=gpulab: maintenance: upgrade']]


def test_drain_of_a_node_drained_for_maintenance_already_changes_nothing(slurm):
    slurm.answers(sinfo=sinfo('ours-job-running'))
    result = step('drain')
    assert not result['changed'] and result['why'] == 'drained for maintenance already (gpulab: maintenance: upgrade)'
    assert slurm.acted() == []


def test_an_admins_drain_seconds_before_the_drain_is_kept(slurm):
    slurm.answers(sinfo=sinfo('admin-over-ours-job-running'))
    result = step('drain')
    assert not result['changed'] and result['left_alone'] and result['reason'] == 'admin: fan swap', result
    assert slurm.acted() == []
    assert result['warnings'] == [result['why']] and 'drained by someone else (admin: fan swap)' in result['why']


def test_a_reason_that_looks_like_fields_is_an_admins_reason_in_either_form(slurm):
    # sinfo --json first; where it gives no JSON (here: rc 1), scontrol show node -o, reason never split
    for answers in ({'sinfo': sinfo('admin-forged')},
                    {'sinfo': [[1, '']], 'scontrol': [[0, 'show-node-o-22.05-admin-forged.txt']]}):
        slurm.answers(**answers)
        result = step('drain')
        assert result['left_alone'] and result['reason'] == 'fan swap State=IDLE Reason=gpulab: maintenance: upgrade'
    assert slurm.acted() == []
    assert ['scontrol', 'show', 'node', '-o', 'gpu01'] in slurm.calls()


def test_a_node_slurm_does_not_know_fails_before_any_change(slurm):
    slurm.answers(sinfo=sinfo('idle'), scontrol=[[1, 'show-node-o-22.05-unknown-node.txt']])
    result = run_main(slurm_maintenance.main, {'action': 'drain', 'node': 'nosuch'})
    assert result['failed'] and result['msg'] == 'scontrol show node nosuch failed (rc 1): Node nosuch not found'
    assert slurm.acted() == []


def test_check_mode_reads_and_changes_nothing(slurm):
    slurm.answers(sinfo=sinfo('allocated'))
    assert step('drain', check=True)['changed']
    assert slurm.acted() == []


# --- wait ----------------------------------------------------------------------------------------------------------

def test_wait_polls_the_jobs_until_none_is_left(slurm):
    slurm.answers(squeue=[[0, 'squeue-22.05-one-running.txt'], [0, '']], sinfo=sinfo('ours'))
    result = step('wait', poll=1, timeout=30)
    assert not result['failed'] and result['jobs'] == [] and not result['left_alone'], result
    assert [call[0] for call in slurm.calls()] == ['squeue', 'squeue', 'sinfo']
    assert slurm.calls()[0] == ['squeue', '-h', '-w', 'gpu01', '-t', 'RUNNING,COMPLETING,CONFIGURING,SUSPENDED',
                                '-o', '%i|%T|%u|%j']


def test_an_admins_drain_during_the_wait_is_found_and_said(slurm):
    slurm.answers(squeue=[[0, 'squeue-22.05-one-running.txt'], [0, '']],
                  sinfo=sinfo('admin-over-ours-job-running'))
    result = step('wait', poll=1, timeout=30)
    assert not result['failed'] and result['left_alone'] and result['reason'] == 'admin: fan swap', result
    assert 'gpu01 was drained by someone else during the wait (admin: fan swap)' in result['why']
    assert 'neither drains it again, reboots it nor resumes it' in result['warnings'][0]
    assert slurm.acted() == []


def test_at_the_bound_the_wait_fails_with_the_jobs_and_the_reason_kept(slurm):
    slurm.answers(squeue=[[0, 'squeue-22.05-one-running.txt']], sinfo=sinfo('ours-job-running'))
    result = step('wait', poll=1, timeout=1)
    assert result['failed'] and result['jobs'] == [{'id': '1', 'state': 'RUNNING', 'user': 'root', 'name': 'wrap'}]
    assert 'still runs 1 job after 1 s' in result['msg'] and 'reason "gpulab: maintenance: upgrade"' in result['msg']
    assert slurm.acted() == []


# --- reboot --------------------------------------------------------------------------------------------------------

def test_reboot_of_our_drain_asks_slurm(slurm):
    slurm.answers(sinfo=sinfo('ours'))
    result = step('reboot')
    assert result['changed'] and result['rebooted'] and result['boot_id'], result
    assert slurm.acted() == [['reboot', 'ASAP', 'nextstate=DOWN', 'reason=gpulab: maintenance: reboot', 'gpu01']]


@pytest.mark.parametrize('case, said', [
    ('admin-over-ours-job-running', 'gpu01 is drained by someone else (admin: fan swap)'),
    ('idle', 'gpu01 is not drained for maintenance any more (someone resumed it): not rebooted'),
])
def test_an_admins_drain_or_resume_before_the_reboot_is_not_rebooted(slurm, case, said):
    slurm.answers(sinfo=sinfo(case))
    result = step('reboot')
    assert not result['changed'] and not result['rebooted'] and result['left_alone'], result
    assert result['why'].startswith(said) and result['warnings'] == [result['why']]
    assert slurm.acted() == []


# --- resume --------------------------------------------------------------------------------------------------------

def test_resume_after_the_check_of_our_drain_and_after_our_reboot(slurm):
    for case in ('ours', 'reboot-issued'):
        slurm.answers(sinfo=sinfo(case))
        result = step('resume', health_program=slurm.program)
        assert result['changed'] and result['resumed'], result
    assert slurm.acted() == [['update', 'NodeName=gpu01', 'State=RESUME']] * 2


def test_an_admins_drain_before_the_resume_is_not_resumed(slurm):
    slurm.answers(sinfo=sinfo('admin-over-ours-job-running'))
    result = step('resume', health_program=slurm.program)
    assert not result['failed'] and not result['changed'] and not result['resumed'] and result['left_alone'], result
    assert 'drained by someone else (admin: fan swap)' in result['why']
    assert slurm.acted() == []
    assert [call[0] for call in slurm.calls()] == ['sinfo']  # read after the check, right before the decision


def test_a_failing_check_leaves_our_drain_and_fails_the_host(slurm, monkeypatch):
    monkeypatch.setenv('GPULAB_FIXTURE_VERDICT', 'unhealthy')
    slurm.answers(sinfo=sinfo('ours'))
    result = step('resume', health_program=slurm.program)
    assert result['failed'] and not result['resumed']
    assert 'the health check failed after the change (exit 1: gpulab-gpu-health: unhealthy)' in result['msg']
    assert slurm.acted() == []


def test_check_mode_resume_runs_no_check_and_leaves_an_admins_drain(slurm):
    slurm.answers(sinfo=sinfo('admin-forged'))
    result = step('resume', check=True, health_program=slurm.program)
    assert result['left_alone'] and not result['changed']
    assert slurm.acted() == []
