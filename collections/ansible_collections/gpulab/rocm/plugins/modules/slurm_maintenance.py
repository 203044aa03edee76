#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: slurm_maintenance
short_description: Drain a Slurm node, wait for its jobs, reboot it through Slurm, resume it after its check
description:
  - The steps of C(playbooks/upgrade.yml) on a Slurm node (docs/health.md, "Maintenance"), run on the node itself
    with C(scontrol) and C(squeue), each call with a timeout. The decisions are in
    C(module_utils/planning/plan_maintenance.py); the maintenance phase of C(gpulab.rocm.plan) says which steps a node gets.
  - 'Every step reads the node from Slurm right before it acts (C(sinfo --json), whose reason is a JSON string of its
    own; else C(scontrol show node -o), whose reason is read as the last field and never split into fields). A node
    drained or down with a reason that is not ours (not C(gpulab: maintenance:)) is an admin''s (or the health
    check''s): no step drains it again, reboots it or resumes it; the step changes nothing, warns and says why.'
  - 'O(action=drain) sets the node to DRAIN with O(reason) (it must start with C(gpulab: maintenance:)); on a node
    drained for maintenance already, a O(reason) other than the default replaces its reason (a step that failed says
    so there).'
  - O(action=wait) polls the node's running jobs until none is left, and fails after O(timeout) seconds with a
    message that names the node and the jobs and says what was changed (only the drain). It reads the node again
    at the end and says when someone else drained it meanwhile (the later steps then leave it alone).
  - 'O(action=reboot) runs C(scontrol reboot ASAP nextstate=DOWN reason="gpulab: maintenance: reboot") for the node
    and returns the boot id it had, only for a node drained by our maintenance; O(action=booted) says whether the
    boot id differs from O(boot_id). slurm.conf needs a C(RebootProgram) (rocm_slurm_reboot_program): the
    maintenance plan refuses the reboot before any change where it has none.'
  - 'O(action=resume) waits up to 60 seconds for a node that has not registered with slurmctld (UNKNOWN or not
    responding, as right after a slurmctld restart: Slurm would refuse the resume and drop the drain), runs the
    health check O(health_program) and resumes the node only when the check passes and
    the node''s reason starts with C(gpulab: maintenance:); a failing check leaves it drained and fails the host.'
  - In check mode nothing is run but C(squeue) and C(scontrol show node); the result says what would be done.
options:
  action:
    description: The step.
    type: str
    required: true
    choices: [drain, wait, reboot, booted, resume]
  node:
    description: The Slurm node name (the maintenance plan's C(node)).
    type: str
    required: true
  reason:
    description: The drain reason.
    type: str
    default: 'gpulab: maintenance: upgrade'
  timeout:
    description: Seconds O(action=wait) waits for the jobs.
    type: int
    default: 3600
  poll:
    description: Seconds between two looks at the jobs.
    type: int
    default: 5
  boot_id:
    description: For O(action=booted), the boot id before the reboot.
    type: str
    default: ''
  health_program:
    description: The node's health check (rocm_health installs it).
    type: path
    default: /usr/sbin/gpulab-gpu-health
author:
  - gpulab.rocm contributors (@gpulab)
'''

EXAMPLES = r'''
- name: Drain the node for the upgrade
  gpulab.rocm.slurm_maintenance:
    action: drain
    node: gpu01

- name: Wait for its jobs, at most an hour
  gpulab.rocm.slurm_maintenance:
    action: wait
    node: gpu01
    timeout: 3600
'''

RETURN = r'''
jobs:
  description: The node's jobs still running (id, state, user, name) when the step ended.
  returned: action is wait
  type: list
  elements: dict
waited:
  description: Seconds waited.
  returned: action is wait
  type: int
boot_id:
  description: The boot id (before the reboot, or now).
  returned: action is reboot or booted
  type: str
booted:
  description: Whether the node booted since O(boot_id).
  returned: action is booted
  type: bool
resumed:
  description: Whether the node was resumed (or would be, in check mode).
  returned: action is resume
  type: bool
left_alone:
  description: The node is drained or down with a reason that is not ours (an admin's, the health check's), so the
    step did nothing to it (O(action=drain), O(action=reboot), O(action=resume)), or, for O(action=wait), someone
    else drained it during the wait.
  returned: always
  type: bool
reason:
  description: The node's reason as Slurm gave it when the step read it last ('' for none).
  returned: when the step read the node
  type: str
rebooted:
  description: Whether the reboot was asked of Slurm (or would be, in check mode).
  returned: action is reboot
  type: bool
why:
  description: The reason of the step's decision.
  returned: always
  type: str
'''

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_maintenance as pm
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import process_run
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.slurm_conf import read_node

BOOT_ID = '/proc/sys/kernel/random/boot_id'
CALL_TIMEOUT = 30
# Seconds a resume waits for a node that has not registered with slurmctld yet (UNKNOWN after its restart).
RESPOND_WAIT = 60


def run(module, argv, seconds=CALL_TIMEOUT):
    # process_run, not module.run_command: that waits a second more after some runs of coreutils' timeout.
    # Its own limit too (timeout(1) stops the tool; this stops what holds its output open after it).
    return process_run(['timeout', str(seconds)] + argv, timeout=seconds + 5)


def show(module, tools, name):
    """The node as Slurm shows it now: {'NodeName', 'State', 'Reason', ...}; fails the host where Slurm does not
    answer."""
    entry, _how, error = read_node(lambda argv: run(module, argv), name, tools['scontrol'], tools['sinfo'])
    if error:
        module.fail_json(msg=error)
    return entry


def jobs(module, squeue, name):
    rc, out, err = run(module, [squeue, '-h', '-w', name, '-t', 'RUNNING,COMPLETING,CONFIGURING,SUSPENDED',
                                '-o', '%i|%T|%u|%j'])
    if rc != 0:
        module.fail_json(msg='squeue -w %s failed (rc %s): %s' % (name, rc, (err or out).strip()[-300:]))
    return pm.parse_jobs(out)


def boot_id():
    with open(BOOT_ID) as handle:
        return handle.read(64).strip()


def leave_alone(module, name, entry, step, **result):
    """The node is someone else's (pm.taken): change nothing, warn, and say why."""
    why = pm.left_alone_message(name, entry.get('Reason'), step)
    module.warn(why)
    module.exit_json(changed=False, left_alone=True, reason=pm.own_reason(entry.get('Reason')), why=why, **result)


def main():
    module = AnsibleModule(argument_spec=dict(
        action=dict(type='str', required=True, choices=['drain', 'wait', 'reboot', 'booted', 'resume']),
        node=dict(type='str', required=True),
        reason=dict(type='str', default=pm.DRAIN_REASON),
        timeout=dict(type='int', default=3600),
        poll=dict(type='int', default=5),
        boot_id=dict(type='str', default=''),
        health_program=dict(type='path', default='/usr/sbin/gpulab-gpu-health'),
    ), supports_check_mode=True)
    params = module.params
    name, action = params['node'], params['action']
    if not pm.NODE_NAME.fullmatch(name):
        module.fail_json(msg='node %r is not a Slurm node name' % name)
    if action == 'booted':
        now = boot_id()
        module.exit_json(changed=False, left_alone=False, booted=now != params['boot_id'], boot_id=now,
                         why='boot id %s' % now)
    if not params['reason'].startswith(pm.MARK) or '\n' in params['reason'] or len(params['reason']) > 200:
        module.fail_json(msg='reason must start with %r and be one line of at most 200 characters' % pm.MARK)
    tools = {'scontrol': module.get_bin_path('scontrol', required=True, opt_dirs=['/usr/sbin']),
             'sinfo': module.get_bin_path('sinfo')}
    check = module.check_mode

    if action == 'drain':
        entry = show(module, tools, name)
        if pm.taken(entry):
            leave_alone(module, name, entry, 'drain')
        reason = pm.own_reason(entry.get('Reason'))
        if pm.is_drained(entry) and reason.startswith(pm.MARK) and params['reason'] in (reason, pm.DRAIN_REASON):
            module.exit_json(changed=False, left_alone=False, reason=reason,
                             why='drained for maintenance already (%s)' % reason)
        if not check:
            rc, out, err = run(module, [tools['scontrol'], 'update', 'NodeName=%s' % name, 'State=DRAIN',
                                        'Reason=%s' % params['reason']])
            if rc != 0:
                module.fail_json(msg='scontrol update %s State=DRAIN failed: %s' % (name, (err or out).strip()))
        module.exit_json(changed=True, left_alone=False, reason=reason,
                         why='drained %s: %s' % (name, params['reason']))

    if action == 'wait':
        squeue = module.get_bin_path('squeue', required=True)
        started = time.time()
        running = jobs(module, squeue, name)
        while running and not check and time.time() - started < params['timeout']:
            time.sleep(max(1, min(params['poll'], params['timeout'] - (time.time() - started))))
            running = jobs(module, squeue, name)
        waited = int(time.time() - started)
        entry = show(module, tools, name)
        reason = pm.own_reason(entry.get('Reason'))
        if running and not check:
            module.fail_json(msg=pm.timeout_message(name, name, running, params['timeout'], reason),
                             jobs=running, waited=waited, reason=reason, left_alone=pm.taken(entry))
        why = ('check mode: would wait for %s' % pm.describe_jobs(running)) if running else (
            'no job runs on %s (waited %d s)' % (name, waited))
        if pm.taken(entry):
            why += '; ' + pm.left_alone_message(name, entry.get('Reason'), 'wait')
            module.warn(why)
        module.exit_json(changed=False, jobs=running, waited=waited, reason=reason, left_alone=pm.taken(entry),
                         why=why)

    if action == 'reboot':
        before = boot_id()
        entry = show(module, tools, name)
        if pm.taken(entry) or not pm.own_reason(entry.get('Reason')).startswith(pm.MARK):
            leave_alone(module, name, entry, 'reboot', boot_id=before, rebooted=False)
        if not check:
            rc, out, err = run(module, [tools['scontrol'], 'reboot', 'ASAP', 'nextstate=DOWN',
                                        'reason=%s' % pm.REBOOT_REASON, name])
            if rc != 0:
                module.fail_json(msg='scontrol reboot %s failed: %s' % (name, (err or out).strip()))
        module.exit_json(changed=True, left_alone=False, boot_id=before, rebooted=True,
                         reason=pm.own_reason(entry.get('Reason')),
                         why='scontrol reboot ASAP nextstate=DOWN %s' % name)

    # resume: the check first, then the node as it is now, then the decision
    if check:
        entry = show(module, tools, name)
        if pm.taken(entry):
            leave_alone(module, name, entry, 'resume', resumed=False)
        why = 'check mode: the health check runs after the change (node now %s, reason %s)' % (
            entry.get('State'), pm.own_reason(entry.get('Reason')) or 'none')
        module.exit_json(changed=False, resumed=False, left_alone=False, reason=pm.own_reason(entry.get('Reason')),
                         why=why)
    rc, out, err = run(module, [params['health_program']], 120)
    summary = ' '.join((out or err or '').split())[:300] or 'no output'
    entry = show(module, tools, name)
    waited = 0
    while not pm.responding(entry) and waited < RESPOND_WAIT:
        # Right after a slurmctld restart (a GRES change) the node is UNKNOWN until its slurmd registers again.
        time.sleep(1)
        waited += 1
        entry = show(module, tools, name)
    if not pm.responding(entry):
        module.fail_json(msg='%s: Slurm shows it %s after %d s: it has not registered with slurmctld, so it is left '
                         'drained (reason kept). Check slurmd on it (systemctl status slurmd), then resume it: scontrol '
                         'update nodename=%s state=RESUME' % (name, entry.get('State'), waited, name),
                         resumed=False, left_alone=False, reason=pm.own_reason(entry.get('Reason')))
    if pm.taken(entry):
        leave_alone(module, name, entry, 'resume', resumed=False)
    resume, why = pm.resume_decision(entry.get('State'), entry.get('Reason'), rc, summary)
    if resume:
        rc, out, err = run(module, [tools['scontrol'], 'update', 'NodeName=%s' % name, 'State=RESUME'])
        if rc != 0:
            module.fail_json(msg='scontrol update %s State=RESUME failed: %s' % (name, (err or out).strip()))
        module.exit_json(changed=True, resumed=True, left_alone=False, reason=pm.own_reason(entry.get('Reason')),
                         why=why)
    if pm.own_reason(entry.get('Reason')).startswith(pm.MARK):
        module.fail_json(msg='%s: %s' % (name, why), resumed=False, left_alone=False,
                         reason=pm.own_reason(entry.get('Reason')))
    module.exit_json(changed=False, resumed=False, left_alone=False, reason=pm.own_reason(entry.get('Reason')),
                     why=why)


if __name__ == '__main__':
    main()
