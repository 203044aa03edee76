# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Maintenance that respects jobs (docs/health.md, "Maintenance"): whether playbooks/upgrade.yml drains a Slurm
node before the roles change it, waits for its jobs, reboots it through Slurm and resumes it after its health
check. Pure: plan() decides from the probe (sections slurm, slurm_state) and the plan pass's other phases; the
module gpulab.rocm.slurm_maintenance runs scontrol and squeue and asks the functions below what to do."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

# The health check's readings of a node's Slurm state and reason, and of slurmd's -N: one copy.
from ansible_collections.gpulab.rocm.plugins.module_utils.node.health_slurm import (
    _DRAINED as DRAINED, _SLURMD_N, flags, own_reason,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'maintenance',
    'role': 'rocm_maintenance',
    'changes_host': False,
    # It guards the other roles' changes: planned with any selected role, after them (it reads their plans);
    # it applies around them (its drain first, its finish last), and only with work of its own.
    'selected': 'with_any_role',
    'applies': 'around',
    'own_work_only': True,
    # Planned last in the pass: it reads the other phases' changes there (module_utils/planning/plan_maintenance.py).
    # Plus 'slurm' and 'slurm_state' where it is on for a host of the Slurm group (plan_maintenance.probe_needs):
    # other runs read no Slurm state for it.
    'sections': ('os',),
    'keys': {
        'node': "The host's Slurm node name, or null where it is not maintained.",
        'drain': 'Whether the play drains the node (not when it is drained already).',
        'wait': 'Whether upgrade.yml takes this Slurm node through the maintenance: it waits for the jobs of the '
                'node to end before any role changes it.',
        'resume': 'Whether the node is resumed after its health check passes (never an admin\'s drain).',
        'gres_first': ('Whether the node is resumed only after upgrade.yml\'s Slurm play gave Slurm its GPUs: its GPU '
                       'partition profile is declared (rocm_partition), so the run can change the GPUs Slurm knows '
                       '(then resume is false and that play resumes it).'),
        'reboot': 'Whether the play reboots the node through Slurm (scontrol reboot ASAP) for a driver change.',
        'reason': 'The drain reason (it starts with V(gpulab: maintenance:)).',
        'timeout': 'Seconds to wait for the jobs of the drained node (rocm_maintenance_drain_timeout).',
        'why': 'The decision for this node, in one line (on a maintenance run also one of its notices).',
    },
    # Keys no role reads: the planner or the plan action uses them itself.
    'read_by_plan': ('why',),
}


MARK = 'gpulab: maintenance:'
DRAIN_REASON = 'gpulab: maintenance: upgrade'
REBOOT_REASON = 'gpulab: maintenance: reboot'
NODE_NAME = re.compile(r'[A-Za-z0-9][A-Za-z0-9_.-]{0,127}')


def slurm_node_name(slurm):
    """The node's Slurm name: -N in /etc/default/slurmd (as the probe read it), else the short host name."""
    defaults = ((slurm.get('files') or {}).get('defaults') or {}).get('content') or ''
    match = _SLURMD_N.search(defaults)
    return match.group(1) if match else slurm.get('hostname')


def _true(value):
    return value is True or (isinstance(value, str) and value.strip().lower() in ('true', 'yes', '1'))


def has_work(plan, wanted):
    """A drain, a wait, a reboot or a resume of its own."""
    return any(plan.get(key) for key in ('drain', 'wait', 'reboot', 'resume', 'gres_first'))


def probe_needs(node, wanted, stack, fresh=()):
    """Slurm's sections, only where the maintenance is on for a host of the Slurm group; slurm_state is read anew
    in each planning of the phase (Slurm's view is live) unless this call read it."""
    if not (_true(wanted.get('enabled')) and _true(wanted.get('slurm_node'))):
        return None
    sections = [section for section in ('slurm', 'slurm_state')
                if section not in fresh and (section == 'slurm_state' or section not in (node.get('sections') or []))]
    return {'sections': sections} if sections else None


def _reboot_left_to_slurm(node):
    """Whether the driver plan of this run changes the driver (or found its reboot pending), or the tuning plan has
    kernel arguments that wait for a reboot, and left the reboot to Slurm (rocm_driver_reboot_through_slurm,
    rocm_tuning_reboot_through_slurm)."""
    driver = ((node.get('plans') or {}).get('driver') or {}).get('plan') or {}
    # The host tuning's kernel arguments (plan_tuning) wait for a reboot the same way.
    tuning = (((node.get('plans') or {}).get('tuning') or {}).get('plan') or {}).get('reboot') or {}
    return bool((driver.get('install') or driver.get('reboot_pending'))
                and (driver.get('reboot') or {}).get('through_slurm')) or bool(tuning.get('needed')
                                                                               and tuning.get('through_slurm'))


def _reboot_for(node):
    """What the reboot through Slurm is for, in words: the driver, the host tuning's kernel arguments, or both."""
    plans = node.get('plans') or {}
    tuning = ((plans.get('tuning') or {}).get('plan') or {}).get('reboot') or {}
    words = ['the driver changed'] if ((plans.get('driver') or {}).get('plan') or {}).get('install') else []
    if tuning.get('needed') and tuning.get('through_slurm'):
        words.append('the kernel arguments %s wait for a reboot (rocm_tuning)' % ' '.join(tuning.get('args') or []))
    return '; '.join(words) or 'the driver changed'


def _partition_declared(node):
    """Whether this run's partition plan has a profile (rocm_partition_compute or _memory): a change, or one that an
    earlier run left half done, alters the node's GPUs, and Slurm must get the new GRES before the node takes jobs."""
    wanted = ((((node.get('plans') or {}).get('partition') or {}).get('plan') or {}).get('wanted')) or {}
    return bool(wanted.get('compute') or wanted.get('memory'))


def _reboot_yourself(why, name=None, reason=None):
    """The line that says who reboots a node the play does not reboot, and how."""
    line = ('%s; /run/reboot-required stays marked: reboot it yourself when that is right' % why)
    if name:
        line += (' (scontrol reboot ASAP nextstate=DOWN reason="%s" %s keeps that reason)' % (reason, name))
    return line


def plan(node, wanted, stack, host=None, previous=None):
    """The maintenance plan (_decide); on a maintenance run its decision (why) is also a notice, so that the gate
    shows every host's before anything changes."""
    result = _decide(node, wanted, stack)
    if result['resume'] and _partition_declared(node):
        # The role passes the controllers its --limit lets in; a caller that does not know them is not refused.
        if 'controllers_in_run' in wanted and not wanted['controllers_in_run']:
            raise PlanError('maintenance: %s has a GPU partition profile (rocm_partition), so upgrade.yml gives Slurm '
                            'its GPUs before it resumes the node, on the Slurm controller; the run\'s --limit leaves '
                            'the controller out. Add it to the limit (-l "%s,slurm_controllers"). Nothing was '
                            'changed.' % (result['node'], result['node']))
        # A resume before slurm.conf and gres.conf follow the GPUs would give jobs GRES the node no longer has (a
        # render node gone) or hide the new ones; the GPU count Slurm sees changes only where the node is drained.
        result.update(resume=False, gres_first=True)
        result['why'] += ('; its GPU partition profile is declared (rocm_partition): upgrade.yml\'s Slurm play gives '
                          'Slurm its GPUs first, then its health check runs and it is resumed')
        for change in result['changes']:
            if change['change'].startswith('resume Slurm node'):
                change['change'] += ', once Slurm has its GPUs (upgrade.yml\'s Slurm play)'
    if _true(wanted.get('enabled')) and not any(result['why'] in line for line in result['notices']):
        result.warn(result['why'])
    return result


def _decide(node, wanted, stack):
    """wanted: enabled (upgrade.yml's maintenance), slurm_node (the host is in group slurm_nodes), controller (in
    group slurm_controllers), node_name ('' reads it from the probe), drain_timeout (seconds). The plan's keys: node,
    drain, wait (the node is maintained), resume, reboot, reason, timeout, why.

    Two nodes are never rebooted by the play, even when the driver left its reboot to Slurm: a node someone else
    drained (scontrol reboot would replace their reason and restart a machine they took out, maybe to work on it),
    and slurmctld's own host (its reboot stops scheduling for the whole cluster and the Slurm calls of the other
    nodes of the batch). A controller runs no job: it is not drained."""
    del stack
    result = Plan('maintenance')
    result.update(node=None, drain=False, wait=False, resume=False, gres_first=False, reboot=False,
                  reason=DRAIN_REASON, timeout=0, why='')
    timeout = wanted.get('drain_timeout', 3600)
    if isinstance(timeout, str) and re.fullmatch(r'[0-9]{1,9}', timeout):
        timeout = int(timeout)
    if isinstance(timeout, bool) or not isinstance(timeout, int) or timeout < 1:
        raise PlanError('rocm_maintenance_drain_timeout must be a whole number of seconds above 0 (how long the '
                        'upgrade waits for the jobs of a drained node), not %r.' % (timeout,))
    result['timeout'] = timeout
    slurm = node.get('slurm') or {}
    if not _true(wanted.get('enabled')):
        result['why'] = 'not a maintenance run (playbooks/upgrade.yml turns it on)'
        return result
    controller = _true(wanted.get('controller'))
    if not _true(wanted.get('slurm_node')):
        if not controller:
            result['why'] = 'not in group slurm_nodes: changed as any host, without Slurm'
            return result
        result['why'] = ('a Slurm controller (group slurm_controllers), not a compute node: it runs no job, so it is '
                         'not drained; changed as any host')
        if _reboot_left_to_slurm(node):
            result['why'] = _reboot_yourself(result['why'] + '; the driver change needs a reboot, which the play '
                                             'does not do on slurmctld\'s host (it would stop scheduling for the '
                                             'whole cluster)')
            result.warn('the driver change needs a reboot that the play leaves to you: ' + result['why'])
        return result
    if 'slurmd' not in (slurm.get('daemons') or []):
        result['why'] = 'slurmd does not run here: no job can run on it, no drain'
        if _reboot_left_to_slurm(node):
            result['why'] += ('; the driver change left its reboot to Slurm, which cannot reboot it: reboot it '
                              'yourself (/run/reboot-required is marked)')
        return result
    name = wanted.get('node_name') or slurm_node_name(slurm)
    if not name or not NODE_NAME.fullmatch(name):
        raise PlanError('maintenance: this host\'s Slurm node name %r is not a node name; set '
                        'rocm_maintenance_node_name to the name slurmd registers.' % (name,))
    result['node'] = name
    state = node.get('slurm_state') or {}
    found = [entry for entry in state.get('nodes') or [] if entry.get('NodeName') == name]
    if state.get('error') or not found:
        raise PlanError('maintenance: slurmd runs here but Slurm does not list node %s (%s): it cannot be drained '
                        'before the change, so its jobs could be killed. Make slurmctld answer (scontrol ping), or '
                        'set rocm_maintenance_node_name to the name slurmd registers.'
                        % (name, state.get('error') or 'not in scontrol show node'))
    changing = [phase for phase in (node.get('pass') or {}).get('order') or []
                if phase != 'maintenance' and ((node.get('pass') or {}).get('changes') or {}).get(phase)]
    current = own_reason(found[0].get('Reason'))
    drained = bool(flags(found[0].get('State')) & DRAINED)
    if not changing and not (drained and current.startswith(MARK)):
        result['why'] = 'nothing to change on %s: not drained' % name
        return result
    if not changing:
        # Our own drain that an earlier run left (stopped at its bound, or killed): finished now, though nothing
        # is left to change (docs/health.md).
        reboot = _reboot_left_to_slurm(node) and not controller
        if reboot:
            _needs_reboot_program(slurm, name)
        result.update(wait=reboot, resume=True, reboot=reboot)
        result.change('resume Slurm node %s after its health check' % name,
                      'it is drained by an earlier maintenance (%s) that did not finish' % current)
        result['why'] = ('%s is drained by an earlier maintenance (%s) and nothing is left to change: %sits health '
                         'check runs, then it is resumed' % (name, current, 'its jobs are waited for, it is rebooted '
                                                             'through Slurm, ' if reboot else ''))
        if reboot:
            result.change('reboot %s through Slurm (scontrol reboot ASAP nextstate=DOWN)' % name,
                          'the driver\'s reboot is pending; the node comes back DOWN and is resumed after its '
                          'health check')
        return result
    reboot = _reboot_left_to_slurm(node)
    result['wait'] = True
    what = ', '.join(changing)
    if drained and current.startswith(MARK):
        result.update(resume=True, why='%s is drained for maintenance already (%s): its jobs are waited for, then %s '
                                       'changes, then the health check resumes it' % (name, current, what))
    elif drained and current:
        result['why'] = ('%s is drained by someone else (%s): the reason is kept, its jobs are waited for, then %s '
                         'changes; it is never resumed by this play' % (name, current, what))
        if reboot:
            reboot = False
            result['why'] = _reboot_yourself(result['why'] + '; the driver change needs a reboot, which the play '
                                             'does not do here (scontrol reboot would replace that reason)',
                                             name, current)
            result.warn('the driver change needs a reboot that the play leaves to you: ' + result['why'])
    else:
        result.update(drain=True, resume=True)
        result.change('drain Slurm node %s (%s)' % (name, DRAIN_REASON),
                      '%s changes and slurmd runs: no job is started or killed during the change' % what)
        result['why'] = ('drain %s (%s) before %s changes, wait for its jobs; resume it after its health check '
                         'passes' % (name, DRAIN_REASON, what))
    if reboot and controller:
        reboot = False
        result['why'] = _reboot_yourself(result['why'] + '; the driver change needs a reboot, which the play does not '
                                         'do on slurmctld\'s host (a compute node that is also the controller)')
        result.warn('the driver change needs a reboot that the play leaves to you: ' + result['why'])
    result['reboot'] = reboot
    if result['reboot']:
        _needs_reboot_program(slurm, name)
        result.change('reboot %s through Slurm (scontrol reboot ASAP nextstate=DOWN)' % name,
                      '%s; the node comes back DOWN and is resumed after its health check' % _reboot_for(node))
    return result


def reboot_program(slurm):
    """slurm.conf's RebootProgram as the probe read the file (section slurm), '' where it sets none, None where the
    probe found no slurm.conf."""
    conf = ((slurm.get('files') or {}).get('slurm.conf') or {})
    if conf.get('type', 'file') != 'file' or conf.get('content') is None:
        return None
    value = ''
    for line in conf['content'].splitlines():
        words, _comment = slurm_conf.split_line(line)
        value = slurm_conf.get(slurm_conf.words_to_dict(words[:1]), 'RebootProgram') or value
    return value


def _needs_reboot_program(slurm, name):
    """A reboot through Slurm runs slurm.conf's RebootProgram: without one, scontrol reboot asks for a reboot that
    never comes and the play waits its whole rocm_maintenance_reboot_timeout. Refused before any change."""
    program = reboot_program(slurm)
    if program:
        return
    raise PlanError('maintenance: the driver change needs a reboot of %s through Slurm (scontrol reboot), and '
                    '%s: Slurm would never reboot it and the play would wait until rocm_maintenance_reboot_timeout. '
                    'Set rocm_slurm_reboot_program (e.g. /usr/sbin/reboot) and run playbooks/slurm.yml first, which '
                    'writes RebootProgram= to slurm.conf; or reboot the node yourself with '
                    'rocm_driver_reboot_through_slurm: false. Nothing was changed.'
                    % (name, 'slurm.conf on it sets no RebootProgram' if program == '' else
                       'the probe could not read slurm.conf on it (absent, a link, or configless Slurm), so no '
                       'RebootProgram is known'))


def is_drained(entry):
    """The node is drained, draining or down (whoever did it)."""
    return bool(flags(entry.get('State')) & DRAINED)


def responding(entry):
    """The node has registered with slurmctld: not UNKNOWN (slurmctld restarted and has not heard from it yet) nor
    NOT_RESPONDING ('*' in sinfo). Slurm 22.05 refuses a RESUME then ("Invalid node state specified") and has
    already cleared the drain, so a resume waits for it."""
    state = entry.get('State') or ''
    return not (flags(state) & {'UNKNOWN', 'NOT_RESPONDING', 'NO_RESPOND'}) and '*' not in state


def taken(entry):
    """The node is drained or down with a reason that is not our maintenance's: an admin's, the health check's,
    Slurm's own. No maintenance step drains it again, reboots it or resumes it."""
    reason = own_reason(entry.get('Reason'))
    return is_drained(entry) and bool(reason) and not reason.startswith(MARK)


def left_alone_message(name, reason, step):
    """Why a maintenance step left the node alone (slurm_maintenance warns it)."""
    current = own_reason(reason)
    if not current:
        return ('%s is not drained for maintenance any more (someone resumed it): not %s by this play; '
                '/run/reboot-required stays marked where the driver changed' % (name, {
                    'reboot': 'rebooted', 'resume': 'resumed', 'drain': 'drained', 'wait': 'waited for'}[step]))
    head = ('%s was drained by someone else during the wait (%s)' % (name, current) if step == 'wait' else
            '%s is drained by someone else (%s)' % (name, current))
    return ('%s: the reason is kept and the play neither drains it again, reboots it nor resumes it (%s step left it '
            'alone); /run/reboot-required stays marked where the driver changed; resume it yourself when that is '
            'right (scontrol update nodename=%s state=RESUME)' % (head, step, name))


def parse_jobs(text):
    """squeue -h -o '%i|%T|%u|%j' -> [{'id', 'state', 'user', 'name'}]."""
    jobs = []
    for line in (text or '').splitlines():
        parts = line.strip().split('|', 3)
        if len(parts) == 4 and parts[0]:
            jobs.append(dict(zip(('id', 'state', 'user', 'name'), parts)))
    return jobs


def describe_jobs(jobs, limit=10):
    shown = ', '.join('%s (%s, %s, %s)' % (job['id'], job['user'], job['name'], job['state'].lower())
                      for job in jobs[:limit])
    return shown + (' and %d more' % (len(jobs) - limit) if len(jobs) > limit else '')


def timeout_message(host, name, jobs, timeout, reason_kept):
    """The message when the bound is reached: the node, its jobs, and what was and was not changed."""
    return ('%s: Slurm node %s still runs %d job%s after %d s (rocm_upgrade_drain_timeout): %s. Nothing of ROCm was '
            'changed on it: the plan pass and the gate change nothing, and the roles had not started. The only change '
            'is Slurm\'s: the node stays drained (reason "%s"), so no new job starts there and the running ones go '
            'on. Run the upgrade again once they end (squeue -w %s), with a longer -e rocm_upgrade_drain_timeout, or '
            'give the node back unchanged with: scontrol update nodename=%s state=RESUME.'
            % (host, name, len(jobs), '' if len(jobs) == 1 else 's', timeout, describe_jobs(jobs), reason_kept,
               name, name))


def resume_decision(state, reason, health_rc, health_summary):
    """(resume: bool, why): resume only a node whose reason is our maintenance's and whose check passed."""
    current = own_reason(reason)
    if not current.startswith(MARK):
        if not (flags(state) & DRAINED):
            return False, 'not drained: nothing to resume'
        return False, 'drained by someone else (%s): left drained' % (current or 'no reason')
    if health_rc != 0:
        return False, ('the health check failed after the change (exit %s: %s): left drained with its reason "%s"; '
                       'resume it by hand once it is fixed (docs/health.md)' % (health_rc, health_summary, current))
    return True, 'the health check passes and the node was drained for maintenance'
