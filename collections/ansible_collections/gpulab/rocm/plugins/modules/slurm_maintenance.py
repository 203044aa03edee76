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
  - 'O(action=drain) sets the node to DRAIN with O(reason) (it must start with C(gpulab: maintenance:)).'
  - O(action=wait) polls the node's running jobs until none is left, and fails after O(timeout) seconds with a
    message that names the node and the jobs and says what was changed (only the drain).
  - 'O(action=reboot) runs C(scontrol reboot ASAP nextstate=DOWN reason="gpulab: maintenance: reboot") for the node
    and returns the boot id it had; O(action=booted) says whether the boot id differs from O(boot_id).'
  - 'O(action=resume) runs the health check O(health_program) and resumes the node only when the check passes and
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
why:
  description: The reason of the step's decision.
  returned: always
  type: str
'''

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_maintenance as pm
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import process_run
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.slurm_conf import parse_scontrol_nodes

BOOT_ID = '/proc/sys/kernel/random/boot_id'
CALL_TIMEOUT = 30


def run(module, argv, seconds=CALL_TIMEOUT):
    # process_run, not module.run_command: that waits a second more after some runs of coreutils' timeout.
    return process_run(['timeout', str(seconds)] + argv)


def show(module, scontrol, name):
    rc, out, err = run(module, [scontrol, 'show', 'node', '-o', name])
    found = [entry for entry in parse_scontrol_nodes(out) if entry.get('NodeName') == name]
    if rc != 0 or not found:
        module.fail_json(msg='scontrol show node %s failed (rc %s): %s' % (name, rc, (err or out).strip()[-300:]))
    return found[0]


def jobs(module, squeue, name):
    rc, out, err = run(module, [squeue, '-h', '-w', name, '-t', 'RUNNING,COMPLETING,CONFIGURING,SUSPENDED',
                                '-o', '%i|%T|%u|%j'])
    if rc != 0:
        module.fail_json(msg='squeue -w %s failed (rc %s): %s' % (name, rc, (err or out).strip()[-300:]))
    return pm.parse_jobs(out)


def boot_id():
    with open(BOOT_ID) as handle:
        return handle.read(64).strip()


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
        module.exit_json(changed=False, booted=now != params['boot_id'], boot_id=now, why='boot id %s' % now)
    if not params['reason'].startswith(pm.MARK) or '\n' in params['reason'] or len(params['reason']) > 200:
        module.fail_json(msg='reason must start with %r and be one line of at most 200 characters' % pm.MARK)
    scontrol = module.get_bin_path('scontrol', required=True, opt_dirs=['/usr/sbin'])
    check = module.check_mode

    if action == 'drain':
        entry = show(module, scontrol, name)
        if pm.own_reason(entry.get('Reason')) == params['reason'] and pm.flags(entry.get('State')) & pm.DRAINED:
            module.exit_json(changed=False, why='drained already with reason %s' % params['reason'])
        if not check:
            rc, out, err = run(module, [scontrol, 'update', 'NodeName=%s' % name, 'State=DRAIN',
                                        'Reason=%s' % params['reason']])
            if rc != 0:
                module.fail_json(msg='scontrol update %s State=DRAIN failed: %s' % (name, (err or out).strip()))
        module.exit_json(changed=True, why='drained %s: %s' % (name, params['reason']))

    if action == 'wait':
        squeue = module.get_bin_path('squeue', required=True, opt_dirs=['/usr/bin'])
        started = time.time()
        running = jobs(module, squeue, name)
        while running and not check and time.time() - started < params['timeout']:
            time.sleep(max(1, min(params['poll'], params['timeout'] - (time.time() - started))))
            running = jobs(module, squeue, name)
        waited = int(time.time() - started)
        if running and not check:
            module.fail_json(msg=pm.timeout_message(module.params['node'], name, running, params['timeout'],
                                                    pm.own_reason(show(module, scontrol, name).get('Reason'))),
                             jobs=running, waited=waited)
        why = ('check mode: would wait for %s' % pm.describe_jobs(running)) if running else (
            'no job runs on %s (waited %d s)' % (name, waited))
        module.exit_json(changed=False, jobs=running, waited=waited, why=why)

    if action == 'reboot':
        before = boot_id()
        if not check:
            rc, out, err = run(module, [scontrol, 'reboot', 'ASAP', 'nextstate=DOWN', 'reason=%s' % pm.REBOOT_REASON,
                                        name])
            if rc != 0:
                module.fail_json(msg='scontrol reboot %s failed: %s' % (name, (err or out).strip()))
        module.exit_json(changed=True, boot_id=before, why='scontrol reboot ASAP nextstate=DOWN %s' % name)

    # resume
    if check:
        entry = show(module, scontrol, name)
        why = 'check mode: the health check runs after the change (node now %s, reason %s)' % (
            entry.get('State'), entry.get('Reason'))
        module.exit_json(changed=False, resumed=False, why=why)
    rc, out, err = run(module, [params['health_program']], 120)
    summary = ' '.join((out or err or '').split())[:300] or 'no output'
    entry = show(module, scontrol, name)
    resume, why = pm.resume_decision(entry.get('State'), entry.get('Reason'), rc, summary)
    if resume:
        rc, out, err = run(module, [scontrol, 'update', 'NodeName=%s' % name, 'State=RESUME'])
        if rc != 0:
            module.fail_json(msg='scontrol update %s State=RESUME failed: %s' % (name, (err or out).strip()))
        module.exit_json(changed=True, resumed=True, why=why)
    if pm.own_reason(entry.get('Reason')).startswith(pm.MARK):
        module.fail_json(msg='%s: %s' % (name, why), resumed=False)
    module.exit_json(changed=False, resumed=False, why=why)


if __name__ == '__main__':
    main()
