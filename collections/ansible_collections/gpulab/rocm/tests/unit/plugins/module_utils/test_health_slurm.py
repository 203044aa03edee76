# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab-slurm-health: who drains and resumes a node, and when it does not (an admin's drain, our maintenance
drains, a flapping GPU)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.node import health, health_slurm

HEALTHY = {'verdict': 'healthy', 'checks': [health.entry('gpu_count', 'pass', '2 GPU(s) in KFD')]}
SICK = {'verdict': 'unhealthy', 'checks': [
    health.entry('render_node', 'fail', '/dev/dri/renderD129 is missing', 1),
    health.entry('pcie_link', 'warn', 'x8', 0)]}
NOW = 1764619200.0


def decide(result, state, reason, resumes=(), limit=3):
    return health_slurm.decide(result, state, reason, list(resumes), NOW, limit, 24)


def test_a_failing_node_is_drained_with_a_gpulab_reason_naming_the_check():
    action, reason, _why = decide(SICK, 'IDLE', 'none')
    assert action == 'drain' and reason == 'gpulab: health: RENDER_NODE: /dev/dri/renderD129 is missing'
    # already drained by us for the same checks: nothing more
    assert decide(SICK, 'IDLE+DRAIN', reason + ' [root@2026-12-01T19:00:00]')[0] == 'none'
    # drained by us for another check: the reason follows the checks
    assert decide(SICK, 'IDLE+DRAIN', 'gpulab: health: PCIE_LINK: x8 [root@2026-12-01T19:00:00]')[0] == 'drain'


def test_a_node_whose_checks_pass_again_is_resumed_only_when_a_health_check_drained_it():
    assert decide(HEALTHY, 'IDLE+DRAIN', 'gpulab: health: RENDER_NODE x [root@2026-12-01T19:00:00]')[0] == 'resume'
    assert decide(HEALTHY, 'DOWN+DRAIN', 'gpulab: health: GPU_COUNT 1 [slurm@2026-12-01T19:00:00]')[0] == 'resume'
    assert decide(HEALTHY, 'IDLE', None)[0] == 'none'


def test_an_admins_drain_is_never_undone():
    assert decide(HEALTHY, 'IDLE+DRAIN', 'disk swap [alice@2026-12-01T19:00:00]')[0] == 'none'
    assert decide(SICK, 'IDLE+DRAIN', 'disk swap [alice@2026-12-01T19:00:00]')[0] == 'none'
    # and our maintenance drains belong to the upgrade play, not to the health check
    assert decide(HEALTHY, 'MIXED+DRAIN', 'gpulab: maintenance: upgrade [root@2026-12-01T19:00:00]')[0] == 'none'
    assert decide(HEALTHY, 'DOWN', 'gpulab: maintenance: reboot [root@2026-12-01T19:00:00]')[0] == 'none'


def test_a_flapping_gpu_is_not_resumed_more_than_the_limit():
    drained = 'gpulab: health: RENDER_NODE x [root@2026-12-01T19:00:00]'
    recent = [NOW - 3600 * hours for hours in (1, 5, 20)]
    action, reason, _why = decide(HEALTHY, 'IDLE+DRAIN', drained, recent)
    assert action == 'hold' and reason.startswith('gpulab: health: flapping: resumed 3 times in 24 h')
    assert decide(HEALTHY, 'IDLE+DRAIN', reason)[0] == 'none'  # stays until an admin resumes it
    old = [NOW - 3600 * hours for hours in (1, 5, 30)]  # one resume is outside the window
    assert decide(HEALTHY, 'IDLE+DRAIN', drained, old)[0] == 'resume'


def test_main_drains_through_scontrol_and_records_resumes(tmp_path, monkeypatch):
    """main() with scontrol answered as Slurm 22.05 prints `show node -o` (one line, KEY=VALUE words)."""
    monkeypatch.setenv('SLURMD_NODENAME', 'n1')
    sysfs = tmp_path / 'sys'
    (sysfs / 'bus' / 'pci' / 'devices').mkdir(parents=True)
    data = tmp_path / 'health.json'
    data.write_text(json.dumps({'sysfs_root': str(sysfs), 'dev_root': str(tmp_path), 'gpu_count': 0}))
    state = {'State': 'IDLE+DRAIN', 'Reason': 'gpulab: health: GPU_COUNT x [root@2026-12-01T19:00:00]'}
    calls = []

    def run(argv, timeout):
        calls.append(argv[1:])
        if argv[1] == 'show':
            return 0, 'NodeName=n1 Arch=x86_64 CoresPerSocket=2 State=%s Reason=%s\n' % (
                state['State'], state['Reason']), ''
        return 0, '', ''
    find = {'scontrol': '/usr/bin/scontrol'}.get
    args = ['--data', str(data), '--state-dir', str(tmp_path / 'state')]
    assert health_slurm.main(args, run, find, NOW) == 0
    assert calls[-1] == ['update', 'NodeName=n1', 'State=RESUME']
    with open(os.path.join(str(tmp_path / 'state'), 'slurm.json')) as handle:
        assert json.load(handle) == {'resumes': [NOW]}
    data.write_text(json.dumps({'sysfs_root': str(sysfs), 'dev_root': str(tmp_path), 'gpu_count': 2}))
    state['State'], state['Reason'] = 'IDLE', 'none'
    health_slurm.main(args, run, find, NOW)
    assert calls[-1] == ['update', 'NodeName=n1', 'State=DRAIN',
                         'Reason=gpulab: health: GPU_COUNT,AMDGPU_LOADED,KFD_NODE,ROCMINFO: 0 GPU(s) in KFD and 0 on '
                         'the PCI bus, 2 expected']


@pytest.mark.parametrize('spoil', ['scontrol', 'state_dir', 'argv'])
def test_main_exits_0_whatever_goes_wrong(tmp_path, monkeypatch, capsys, spoil):
    """slurmd's HealthCheckProgram: an internal error (scontrol printing nonsense, a state folder it cannot write,
    a bad command line) is logged and the program exits 0, the node left as it is."""
    monkeypatch.setenv('SLURMD_NODENAME', 'n1')
    sysfs = tmp_path / 'sys'
    (sysfs / 'bus' / 'pci' / 'devices').mkdir(parents=True)
    data = tmp_path / 'health.json'
    data.write_text(json.dumps({'sysfs_root': str(sysfs), 'dev_root': str(tmp_path), 'gpu_count': 0}))
    state_dir = tmp_path / 'state'
    calls = []

    def run(argv, timeout):
        calls.append(argv[1:])
        if spoil == 'scontrol':
            raise UnicodeDecodeError('utf-8', b'\xff', 0, 1, 'invalid start byte')
        return 0, 'NodeName=n1 State=IDLE Reason=none\n', ''
    if spoil == 'state_dir':
        state_dir.write_text('a file where the state folder should be')
    args = ['--data', str(data), '--state-dir', str(state_dir)] if spoil != 'argv' else ['--data']
    assert health_slurm.main(args, run, {'scontrol': '/usr/bin/scontrol'}.get, NOW) == 0
    err = capsys.readouterr().err
    assert 'gpulab-slurm-health: internal error, node not drained or resumed: ' in err, err
    assert not [call for call in calls if call[0] == 'update']


# --- the prolog variant: Slurm drains with its own reason, the health check takes it as ours -----------------------

REFUSED = {'time': NOW - 10, 'job': '42', 'reason': 'gpulab: health: RENDER_NODE: /dev/dri/renderD129 is missing'}
SLURMS = 'Prolog error [slurm@2026-12-01T19:00:00]'


def test_slurms_prolog_drain_takes_the_checks_reason_only_after_our_prologs_refusal():
    action, reason, why = health_slurm.decide(SICK, 'IDLE+DRAIN', SLURMS, [], NOW, 3, 24, REFUSED)
    assert action == 'drain' and reason == REFUSED['reason'] and 'refused job 42' in why
    # healthy again: resumed, as a drain of ours
    action, _reason, why = health_slurm.decide(HEALTHY, 'IDLE+DRAIN', SLURMS, [], NOW, 3, 24, REFUSED)
    assert action == 'resume' and 'refusal of job 42' in why
    # without our prolog's record, "Prolog error" is Slurm's (another prolog, a killed one): left as it is
    assert decide(SICK, 'IDLE+DRAIN', SLURMS)[0] == 'none'
    assert decide(HEALTHY, 'IDLE+DRAIN', SLURMS)[0] == 'none'
    # an admin's drain stays an admin's, record or not
    assert health_slurm.decide(HEALTHY, 'IDLE+DRAIN', 'fan swap [root@x]', [], NOW, 3, 24, REFUSED)[0] == 'none'


def sysfs_data(tmp_path, count):
    sysfs = tmp_path / 'sys'
    (sysfs / 'bus' / 'pci' / 'devices').mkdir(parents=True, exist_ok=True)
    data = tmp_path / 'health.json'
    data.write_text(json.dumps({'sysfs_root': str(sysfs), 'dev_root': str(tmp_path), 'gpu_count': count}))
    return ['--data', str(data), '--state-dir', str(tmp_path / 'state')]


def test_the_prolog_refuses_a_job_on_an_unhealthy_node_and_records_it(tmp_path, monkeypatch):
    monkeypatch.setenv('SLURM_JOB_ID', '42')
    monkeypatch.setenv('SLURMD_NODENAME', 'n1')
    calls = []

    def run(argv, timeout):  # the prolog calls no Slurm command (and the fixture node has no rocminfo)
        calls.append(argv)
        return 0, '', ''
    find = {'scontrol': '/usr/bin/scontrol'}.get
    args = sysfs_data(tmp_path, 0)
    assert health_slurm.prolog(args, run, find, NOW) == 0
    assert not os.path.exists(str(tmp_path / 'state' / 'prolog.json'))
    args = sysfs_data(tmp_path, 2)
    assert health_slurm.prolog(args, run, find, NOW) == 1
    assert not [argv for argv in calls if 'scontrol' in argv[0]]
    with open(str(tmp_path / 'state' / 'prolog.json')) as handle:
        record = json.load(handle)
    assert record['job'] == '42' and record['reason'].startswith('gpulab: health: GPU_COUNT')
    # the health check then finds Slurm's drain: it gives it our reason, and once healthy resumes it and forgets
    state = {'State': 'IDLE+DRAIN', 'Reason': SLURMS}

    def slurm(argv, timeout):
        calls.append(argv[1:])
        if argv[1] == 'show':
            return 0, 'NodeName=n1 State=%s Reason=%s\n' % (state['State'], state['Reason']), ''
        return 0, '', ''
    health_slurm.main(args, slurm, find, NOW)
    assert calls[-1] == ['update', 'NodeName=n1', 'State=DRAIN', 'Reason=' + record['reason']]
    health_slurm.main(sysfs_data(tmp_path, 0), slurm, find, NOW)
    assert calls[-1] == ['update', 'NodeName=n1', 'State=RESUME']
    assert not os.path.exists(str(tmp_path / 'state' / 'prolog.json'))
    # a job id that is not one is not written as it is
    monkeypatch.setenv('SLURM_JOB_ID', '42; rm -rf /')
    assert health_slurm.prolog(sysfs_data(tmp_path, 2), run, find, NOW) == 1
    with open(str(tmp_path / 'state' / 'prolog.json')) as handle:
        assert json.load(handle)['job'] == '?'
