# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance phase of upgrade.yml: which Slurm node is drained and why, what the bound's message says, and
which node is resumed after its health check (module_utils/planning/plan_maintenance.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_maintenance as pm, planner
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf
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


# slurm.conf as rocm_slurm writes it with rocm_slurm_reboot_program set (the RebootProgram line, abridged).
CONF = 'ClusterName=lab\nRebootProgram=/usr/sbin/reboot  # gpulab.rocm (role rocm_slurm)\nNodeName=gpu01 State=UNKNOWN\n'


def node(line=IDLE, daemons=('munged', 'slurmd'), changes=None, driver=None, error=None, conf=CONF):
    changes = CHANGES if changes is None else changes
    files = {'defaults': {'content': ''}, 'slurm.conf': {'exists': True, 'type': 'file', 'content': conf}}
    if conf is None:
        files['slurm.conf'] = {'exists': False, 'type': None}
    probe = {'slurm': {'daemons': list(daemons), 'hostname': 'gpu01', 'files': files},
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


# --- issue 38: a reboot through Slurm needs a RebootProgram; our own earlier drain is finished ----------------------

def test_a_reboot_through_slurm_without_a_reboot_program_is_refused_before_any_change():
    with pytest.raises(PlanError, match='slurm.conf on it sets no RebootProgram: Slurm would never reboot it') as err:
        plan(node(MIXED, driver=THROUGH, conf='ClusterName=lab\n#RebootProgram=/usr/sbin/reboot\n'))
    assert 'Set rocm_slurm_reboot_program' in str(err.value) and 'Nothing was changed.' in str(err.value)
    with pytest.raises(PlanError, match='could not read slurm.conf on it'):
        plan(node(MIXED, driver=THROUGH, conf=None))
    # no reboot by the play, nothing to refuse: an admin's drain, or a driver that reboots by itself
    assert not plan(node(ADMIN, driver=THROUGH, conf=''))['reboot']
    assert not plan(node(MIXED, conf=''))['reboot']
    assert pm.reboot_program(node()['slurm']) == '/usr/sbin/reboot'


def test_our_own_drain_left_by_an_earlier_run_is_finished_when_nothing_is_left_to_change():
    converged = {'order': ['repo', 'sdk'], 'changes': {'repo': [], 'sdk': []}}
    result = plan(node(OURS, changes=converged))
    assert (result['drain'], result['wait'], result['resume'], result['reboot']) == (False, False, True, False)
    assert pm.has_work(result, WANTED)
    assert result['why'] == ('gpu01 is drained by an earlier maintenance (gpulab: maintenance: upgrade) and nothing '
                             'is left to change: its health check runs, then it is resumed')
    assert [change['change'] for change in result['changes']] == ['resume Slurm node gpu01 after its health check']
    # the reboot it stopped before, still pending: waited for, rebooted, resumed
    pending = dict(THROUGH, install=[], reboot_pending=True)
    result = plan(node(OURS.replace('upgrade', 'reboot'), changes=converged, driver=pending))
    assert (result['wait'], result['resume'], result['reboot']) == (True, True, True)
    # an admin's drain is not ours to finish
    assert plan(node(ADMIN, changes=converged))['why'] == 'nothing to change on gpu01: not drained'


FIXTURES = os.path.join(os.path.dirname(__file__), 'fixtures', 'scontrol')


def captured(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


@pytest.mark.parametrize('case, state, reason', [
    ('idle', 'IDLE', None),
    ('allocated', 'ALLOCATED', None),
    ('ours-job-running', 'ALLOCATED+DRAIN', 'gpulab: maintenance: upgrade'),
    ('admin-over-ours-job-running', 'ALLOCATED+DRAIN', 'admin: fan swap'),
    # an admin's reason that looks like fields decides nothing
    ('admin-forged', 'IDLE+DRAIN', 'fan swap State=IDLE Reason=gpulab: maintenance: upgrade'),
    # a comment that looks like a reason and a state is neither
    ('comment-only', 'IDLE+NOT_RESPONDING', None),
    ('ours-with-comment', 'IDLE+DRAIN', 'gpulab: maintenance: upgrade'),
    ('reboot-requested', 'IDLE+DRAIN+REBOOT_REQUESTED', 'gpulab: maintenance: reboot'),
    ('reboot-issued', 'DOWN+DRAIN+REBOOT_ISSUED', 'gpulab: maintenance: reboot : reboot issued'),
])
def test_slurms_real_outputs_give_the_same_state_and_reason_in_both_forms(case, state, reason):
    text = parse_scontrol_nodes(captured('show-node-o-22.05-%s.txt' % case))
    assert len(text) == 1 and text[0]['NodeName'] == 'gpu01'
    from_json = slurm_conf.parse_node_json(captured('sinfo-json-22.05-%s.json' % case), 'gpu01')
    assert from_json['State'] == state
    assert pm.own_reason(from_json['Reason']) == (reason or '')
    assert pm.own_reason(text[0].get('Reason')) == (reason or ''), text[0]
    if case != 'comment-only':  # the comment was set a moment after the text's read: Slurm's NOT_RESPONDING flag
        assert text[0]['State'] == state.replace('+NOT_RESPONDING', '')
    assert pm.taken(from_json) == (case in ('admin-over-ours-job-running', 'admin-forged'))
    assert pm.taken(text[0]) == pm.taken(from_json)


def test_the_comment_after_the_reason_is_read_whole():
    entry = parse_scontrol_nodes(captured('show-node-o-22.05-ours-with-comment.txt'))[0]
    assert entry['Comment'] == 'Reason=gpulab: maintenance: upgrade State=IDLE+DRAIN'
    assert entry['Reason'].startswith('gpulab: maintenance: upgrade [root@2026-12-06T')
    assert entry['OS'] == 'Linux 6.18.44-fc-v1300 #1 SMP PREEMPT_DYNAMIC @0 '


def test_read_node_prefers_sinfo_json_and_falls_back_to_the_text():
    calls = []

    def call(argv):
        calls.append(argv)
        if argv[0] == 'sinfo':
            return 0, captured('sinfo-json-22.05-admin-forged.json'), ''
        return 0, captured('show-node-o-22.05-admin-forged.txt'), ''
    entry, how, error = slurm_conf.read_node(call, 'gpu01', 'scontrol', 'sinfo')
    assert (how, error, calls) == ('sinfo --json', None, [['sinfo', '--json', '-n', 'gpu01']])
    assert entry['State'] == 'IDLE+DRAIN'
    # sinfo --json prints every node whatever -n says: a node it does not list is read from scontrol
    entry, how, error = slurm_conf.read_node(call, 'nosuch', 'scontrol', 'sinfo')
    assert (entry, how) == (None, 'scontrol show node -o') and 'failed (rc 0)' in error
    entry, how, error = slurm_conf.read_node(
        lambda argv: (1, captured('show-node-o-22.05-unknown-node.txt'), ''), 'nosuch', 'scontrol')
    assert error == 'scontrol show node nosuch failed (rc 1): Node nosuch not found'


def test_a_step_leaves_someone_elses_drain_alone_and_says_why():
    admin = parse_scontrol_nodes(ADMIN)[0]
    assert pm.taken(admin) and not pm.taken(parse_scontrol_nodes(OURS)[0])
    assert not pm.taken(parse_scontrol_nodes(IDLE)[0])
    text = pm.left_alone_message('gpu01', admin['Reason'], 'reboot')
    assert text.startswith('gpu01 is drained by someone else (admin: fan swap): the reason is kept and the play '
                           'neither drains it again, reboots it nor resumes it (reboot step left it alone)')
    assert 'during the wait (admin: fan swap)' in pm.left_alone_message('gpu01', admin['Reason'], 'wait')
    assert pm.left_alone_message('gpu01', '', 'resume').startswith(
        'gpu01 is not drained for maintenance any more (someone resumed it): not resumed')


def test_rocm_slurm_writes_an_owned_reboot_program_line_that_the_maintenance_reads():
    from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_slurm, slurm_files
    lab = 'ClusterName=lab\nRebootProgram=/opt/lab/reboot\nNodeName=gpu01 Gres=gpu:mi250x:2 State=UNKNOWN\n'
    record = {'name': 'gpu01', 'gres': 'gpu:mi250x:2'}
    wanted = {'health_check': False, 'reboot_program': '/usr/sbin/reboot'}
    conf = slurm_files.edit_slurm_conf(lab, [record], slurm_files.owned_lines(wanted))
    assert 'RebootProgram=/usr/sbin/reboot' + slurm_files.OWNED_LINE in conf.splitlines()
    assert pm.reboot_program({'files': {'slurm.conf': {'type': 'file', 'content': conf}}}) == '/usr/sbin/reboot'
    # off again: our line goes, a lab's own line stays
    assert 'RebootProgram' not in slurm_files.edit_slurm_conf(conf, [record], slurm_files.owned_lines({}))
    assert 'RebootProgram=/opt/lab/reboot' in slurm_files.edit_slurm_conf(lab, [record], slurm_files.owned_lines({}))
    problems = plan_slurm.check_cluster({'cluster_name': 'lab', 'partition': 'gpu', 'slurmctld_port': 6817,
                                         'slurmd_port': 6818, 'reboot_program': 'reboot now'})
    assert problems == ["rocm_slurm_reboot_program must be an absolute path without spaces, \"#\" or quotes "
                        "(slurm.conf RebootProgram, e.g. /usr/sbin/reboot), or empty for none, got 'reboot now'"]


def test_a_node_with_a_partition_profile_is_resumed_only_after_slurm_has_its_gpus():
    # The partition phase changes the GPUs (8 -> 64): drained and waited for as any change, but the resume waits for
    # upgrade.yml's Slurm play (gres.conf and Gres= must follow first).
    changing = {'order': ['partition', 'health'], 'changes': {'partition': ['amd-smi set'], 'health': []}}
    profile = {'compute': 'CPX', 'memory': 'NPS4'}
    probe = dict(node(MIXED, changes=changing), plans={'partition': {'plan': {'wanted': profile}}})
    result = plan(probe)
    assert (result['drain'], result['wait'], result['resume'], result['gres_first']) == (True, True, False, True)
    assert "upgrade.yml's Slurm play gives Slurm its GPUs first" in result['why'] and pm.has_work(result, WANTED)
    # A run that stopped half way left our drain: nothing left to change, still the Slurm play first.
    converged = dict(probe, **{'pass': {'order': ['partition'], 'changes': {'partition': []}}})
    result = plan(dict(converged, slurm_state={'nodes': parse_scontrol_nodes(OURS), 'error': None}))
    assert (result['resume'], result['gres_first']) == (False, True)
    assert result['changes'][0]['change'] == ("resume Slurm node gpu01 after its health check, once Slurm has its "
                                              "GPUs (upgrade.yml's Slurm play)")
    # No profile: resumed by the maintenance's own finish, as before.
    assert plan(node(MIXED, changes=changing))['gres_first'] is False
    # The Slurm play needs the controller: a --limit without it is refused before any change.
    with pytest.raises(PlanError, match='the run\'s --limit leaves the controller out') as err:
        plan(probe, controllers_in_run=[])
    assert 'Nothing was changed.' in str(err.value)
    assert plan(probe, controllers_in_run=['ctl'])['gres_first']


def test_a_node_that_has_not_registered_since_slurmctld_restarted_is_waited_for():
    # scontrol show node -o right after a slurmctld restart (Slurm 22.05): UNKNOWN with the drain it saved
    entry = parse_scontrol_nodes(OURS.replace('State=MIXED+DRAIN', 'State=UNKNOWN+DRAIN+NOT_RESPONDING'))[0]
    assert not pm.responding(entry) and not pm.responding({'State': 'IDLE+DRAIN*'})
    assert pm.responding(parse_scontrol_nodes(OURS)[0]) and pm.responding({'State': 'IDLE'})
