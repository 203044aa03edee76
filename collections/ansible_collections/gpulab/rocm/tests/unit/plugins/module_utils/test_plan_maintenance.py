# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance phase of upgrade.yml: which Slurm node is drained and why, what the bound's message says, and
which node is resumed after its health check (module_utils/planning/plan_maintenance.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_maintenance as pm, planner
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.slurm_conf import parse_scontrol_nodes

# scontrol show node -o as Slurm 22.05 (Debian 12) prints it, shortened to the fields read.
IDLE = 'NodeName=gpu01 Arch=x86_64 CPUTot=4 State=IDLE ThreadsPerCore=1 Reason=(null)'
MIXED = 'NodeName=gpu01 Arch=x86_64 CPUTot=4 State=MIXED ThreadsPerCore=1'
ADMIN = ('NodeName=gpu01 Arch=x86_64 CPUTot=4 State=IDLE+DRAIN ThreadsPerCore=1 '
         'Reason=admin: fan swap [root@2026-12-01T20:00:00]')
OURS = ('NodeName=gpu01 Arch=x86_64 CPUTot=4 State=MIXED+DRAIN ThreadsPerCore=1 '
        'Reason=gpulab: maintenance: upgrade [root@2026-12-01T20:00:00]')
WANTED = {'enabled': True, 'slurm_node': True, 'node_name': '', 'drain_timeout': 600}
CHANGES = {'order': ['preflight', 'repo', 'sdk', 'health'],
           'changes': {'repo': [], 'sdk': ['install rocm-hip-runtime'], 'health': []}}


def node(line=IDLE, daemons=('munged', 'slurmd'), changes=None, driver=None, error=None):
    changes = CHANGES if changes is None else changes
    probe = {'slurm': {'daemons': list(daemons), 'hostname': 'gpu01', 'files': {'defaults': {'content': ''}}},
             'slurm_state': {'nodes': parse_scontrol_nodes(line), 'error': error}, 'pass': changes}
    if driver is not None:
        probe['plans'] = {'driver': {'plan': driver}}
    return probe


def plan(probe, **wanted):
    return planner.plan('maintenance', probe, dict(WANTED, **wanted), {})


def test_a_slurm_node_that_changes_is_drained_waited_for_and_resumed():
    result = plan(node(MIXED))
    assert (result['wait'], result['drain'], result['resume'], result['reboot']) == (
        True, True, True, False)
    assert result['node'] == 'gpu01' and result['reason'] == 'gpulab: maintenance: upgrade'
    assert result['changes'][0]['change'] == 'drain Slurm node gpu01 (gpulab: maintenance: upgrade)'
    assert 'sdk changes' in result['changes'][0]['reason']


def test_a_converged_node_is_not_drained():
    result = plan(node(changes={'order': ['repo', 'sdk'], 'changes': {'repo': [], 'sdk': []}}))
    assert not result['wait'] and not result['drain'] and result['changes'] == []
    assert result['why'] == 'nothing to change on gpu01: not drained'


@pytest.mark.parametrize('wanted, probe, why', [
    ({'enabled': False}, node(), 'not a maintenance run'),
    ({'slurm_node': False}, node(), 'not in group slurm_nodes'),
    ({}, node(daemons=('munged',)), 'slurmd does not run here'),
])
def test_hosts_outside_slurm_keep_todays_behaviour(wanted, probe, why):
    result = plan(probe, **wanted)
    assert not result['wait'] and not result['drain'] and result['changes'] == [] and why in result['why']


def test_a_maintenance_run_gives_its_decision_as_a_notice_once():
    # The gate shows each host's decision before anything changes; outside upgrade.yml there is nothing to say.
    assert plan(node(MIXED))['notices'] == [plan(node(MIXED))['why']]
    assert plan(node(), slurm_node=False)['notices'] == ['not in group slurm_nodes: changed as any host, without Slurm']
    assert plan(node(), enabled=False)['notices'] == []
    # a decision that is a warning already is not given twice
    controller = plan(node(), slurm_node=False, controller=True,
                      driver={'install': True, 'reboot': {'through_slurm': True}})
    assert len(controller['notices']) == 1 and controller['why'] in controller['notices'][0]


def test_an_admins_drain_keeps_its_reason_and_is_never_resumed():
    result = plan(node(ADMIN))
    assert result['wait'] and result['wait'] and not result['drain'] and not result['resume']
    assert 'drained by someone else (admin: fan swap)' in result['why']


def test_our_own_drain_of_a_stopped_run_is_continued():
    result = plan(node(OURS))
    assert result['wait'] and not result['drain'] and result['resume'] and result['wait']


def test_slurmd_without_an_answering_controller_is_refused_before_any_change():
    with pytest.raises(PlanError, match='Slurm does not list node gpu01 .scontrol show node failed'):
        plan(node('', error='scontrol show node failed (rc 1): Unable to contact slurm controller'))


def test_the_node_name_comes_from_slurmds_minus_n():
    probe = node(IDLE.replace('gpu01', 'n7'))
    probe['slurm']['files']['defaults']['content'] = 'SLURMD_OPTIONS="-N n7 -s"\n'
    assert plan(probe)['node'] == 'n7'
    with pytest.raises(PlanError, match='rocm_maintenance_node_name'):
        plan(node(), node_name='bad name;')


@pytest.mark.parametrize('value', [0, -1, 'soon', True, 1.5])
def test_a_bad_timeout_names_the_variable(value):
    with pytest.raises(PlanError, match='rocm_maintenance_drain_timeout'):
        plan(node(), drain_timeout=value)
    assert plan(node(), drain_timeout='30')['timeout'] == 30


def test_a_driver_change_reboots_through_slurm_only_when_the_driver_left_it_to_slurm():
    through = {'install': ['amdgpu-dkms'], 'reboot_pending': False, 'reboot': {'through_slurm': True}}
    result = plan(node(driver=through))
    assert result['reboot'] and 'scontrol reboot ASAP nextstate=DOWN' in result['changes'][1]['change']
    itself = dict(through, reboot={'allowed': True, 'through_slurm': False})
    assert not plan(node(driver=itself))['reboot']
    nothing = dict(through, install=[])
    assert not plan(node(driver=nothing))['reboot']
    # no slurmd: nobody reboots it, and the plan says so
    alone = plan(node(daemons=('munged',), driver=through))
    assert not alone['reboot'] and 'reboot it yourself (/run/reboot-required is marked)' in alone['why']


def test_the_driver_leaves_its_reboot_to_slurm_when_told():
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_driver
    told = plan_driver.reboot_plan(True, 'ssh', 'a', 'b', False, through_slurm=True)
    assert told == {'allowed': False, 'through_slurm': True, 'reason': told['reason']} and 'Slurm' in told['reason']
    # a container is never rebooted, whoever would do it
    assert not plan_driver.reboot_plan(True, 'ssh', 'a', 'b', True, through_slurm=True)['through_slurm']


def test_the_bound_names_the_node_the_jobs_and_what_was_changed():
    jobs = pm.parse_jobs('12|RUNNING|alice|train\n13|COMPLETING|bob|wrap\n')
    text = pm.timeout_message('host1', 'gpu01', jobs, 30, 'gpulab: maintenance: upgrade')
    assert text.startswith('host1: Slurm node gpu01 still runs 2 jobs after 30 s')
    assert '12 (alice, train, running), 13 (bob, wrap, completing)' in text
    assert 'Nothing of ROCm was changed on it' in text and 'stays drained' in text
    assert 'scontrol update nodename=gpu01 state=RESUME' in text


@pytest.mark.parametrize('line, rc, resume, why', [
    (OURS, 0, True, 'the health check passes'),
    (OURS, 1, False, 'the health check failed after the change (exit 1'),
    (ADMIN, 0, False, 'drained by someone else (admin: fan swap)'),
    (IDLE, 0, False, 'not drained'),
])
def test_only_our_drain_with_a_passing_check_is_resumed(line, rc, resume, why):
    entry = parse_scontrol_nodes(line)[0]
    got = pm.resume_decision(entry.get('State'), entry.get('Reason'), rc, 'RENDER_NODE')
    assert got[0] is resume and why in got[1], got


def test_slurms_state_is_read_only_where_the_maintenance_is_on():
    assert planner.probe_needs('maintenance', {'sections': ['os']}, dict(WANTED, enabled=False), {}) is None
    assert planner.probe_needs('maintenance', {'sections': ['os']}, dict(WANTED, slurm_node=False), {}) is None
    assert planner.probe_needs('maintenance', {'sections': ['os']}, WANTED, {}) == {
        'sections': ['slurm', 'slurm_state']}
    # Slurm's view is live: read again, unless this very call read it
    assert planner.probe_needs('maintenance', {'sections': ['os', 'slurm', 'slurm_state']}, WANTED, {}) == {
        'sections': ['slurm_state']}
    assert planner.probe_needs('maintenance', {'sections': ['os', 'slurm', 'slurm_state']}, WANTED, {},
                               fresh=['slurm_state']) is None


THROUGH = {'install': ['amdgpu-dkms'], 'reboot_pending': False, 'reboot': {'through_slurm': True}}


def test_a_node_someone_else_drained_is_not_rebooted_and_keeps_its_reason():
    result = plan(node(ADMIN, driver=THROUGH))
    assert not result['reboot'] and not result['resume'] and not result['drain']
    assert not [change for change in result['changes'] if change['change'].startswith('reboot')]
    assert 'which the play does not do here (scontrol reboot would replace that reason)' in result['why']
    assert 'scontrol reboot ASAP nextstate=DOWN reason="admin: fan swap" gpu01 keeps that reason' in result['why']
    assert '/run/reboot-required stays marked' in result['why'] and result['notices']
    # the health check's drain is someone else's as well for this play (it never resumes it either)
    health = ADMIN.replace('admin: fan swap', 'gpulab: health: RENDER_NODE: /dev/dri/renderD128 is missing')
    assert not plan(node(health, driver=THROUGH))['reboot']
    # our own maintenance drain, continued: rebooted
    assert plan(node(OURS, driver=THROUGH))['reboot']


def test_a_controller_is_never_drained_nor_rebooted():
    alone = plan(node(daemons=('munged', 'slurmctld')), slurm_node=False, controller=True)
    assert (alone['node'], alone['drain'], alone['wait'], alone['reboot']) == (None, False, False, False)
    assert alone['why'] == ('a Slurm controller (group slurm_controllers), not a compute node: it runs no job, so it '
                            'is not drained; changed as any host')
    driver = plan(node(daemons=('munged', 'slurmctld'), driver=THROUGH), slurm_node=False, controller=True)
    assert not driver['reboot'] and "does not do on slurmctld's host" in driver['why'] and driver['notices']
    # a controller that is a compute node too: drained, waited for and resumed as one, but not rebooted
    both = plan(node(MIXED, daemons=('munged', 'slurmctld', 'slurmd'), driver=THROUGH), controller=True)
    assert both['drain'] and both['wait'] and both['resume'] and not both['reboot']
    assert 'a compute node that is also the controller' in both['why']
    assert [change['change'] for change in both['changes']] == ['drain Slurm node gpu01 (gpulab: maintenance: upgrade)']
