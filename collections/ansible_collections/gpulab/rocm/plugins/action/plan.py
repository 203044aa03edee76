# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.plan: probe the node once, then plan one phase (docs in plugins/modules/plan.py).

Glue only: the stack-wide inputs come from the host's variables (module_utils/stack.py declares them), the node's
state from gpulab.rocm.node_probe (kept as the host fact gpulab_node, marked with this run so that a fact cache
never serves an older run's probe), the decisions from module_utils/planner.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpulab.rocm.plugins.module_utils import planner, stack
from ansible_collections.gpulab.rocm.plugins.module_utils.plan_common import PlanError

# Read again for every planning call that needs them: valid only at that moment.
EPHEMERAL_SECTIONS = ('candidates', 'autoremove', 'fix_broken')


class ActionModule(ActionBase):

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        _valid, args = self.validate_argument_spec(argument_spec=dict(
            phase=dict(type='str', choices=list(planner.PHASES)),
            forget=dict(type='bool', default=False),
            wanted=dict(type='dict', default={}),
            probe=dict(type='dict', default={}),
            refresh=dict(type='list', elements='str', default=[]),
        ))
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        if args['forget']:
            # The host changed in a way no plan foresaw (a failed package run): the next plan probes it anew.
            result.update(changed=False, msg='the probe of this host is forgotten; the next plan reads it anew',
                          ansible_facts={'gpulab_node': {'run': _run_id(), 'sections': []}})
            return result
        if not args['phase']:
            raise AnsibleActionFail('phase is required (unless forget is true)')

        try:
            inputs = stack.resolve(dict((name, self._templar.template(task_vars[name]))
                                        for name in stack.DEFAULTS if name in task_vars))
        except stack.StackError as exc:
            raise AnsibleActionFail(str(exc))

        node = (task_vars.get('ansible_facts') or {}).get('gpulab_node')
        run = _run_id()
        if not isinstance(node, dict) or node.get('run') != run:
            node = {}
        node = dict((key, value) for key, value in node.items() if key not in EPHEMERAL_SECTIONS)
        # What to read again before planning: everything for a new node or 'all', else the sections named.
        refresh = args['refresh']
        sections = None if 'all' in refresh else list(refresh)
        probe_args = dict(node.get('params') or {})
        probe_args.update(users=inputs['gpu_users'], kernel_driver=inputs['kernel_driver'])
        probe_args.update(args['probe'])
        fresh = set()
        if sections is None or sections:
            node = self._probe(node, probe_args, sections, task_vars)
            fresh.update(node['sections'] if sections is None else sections)
        needs = planner.probe_needs(args['phase'], node, args['wanted'], inputs, fresh)
        if needs:
            probe_args.update((key, value) for key, value in needs.items() if key != 'sections')
            node = self._probe(node, probe_args, needs['sections'], task_vars)

        host = {'name': task_vars.get('inventory_hostname'),
                'connection': self._play_context.connection,
                'controller_machine_id': _controller_machine_id()}
        try:
            plan = planner.plan(args['phase'], node, args['wanted'], inputs, host)
        except PlanError as exc:
            raise AnsibleActionFail(str(exc))

        result.update(plan)
        result['stack'] = inputs
        result['changed'] = False
        result['msg'] = '%s: %s' % (args['phase'], '; '.join(
            '%s (%s)' % (item['change'], item['reason']) for item in plan.get('changes') or []) or 'nothing to change')
        # The node's state for the later phases of this run.
        kept = dict((key, value) for key, value in node.items() if key not in EPHEMERAL_SECTIONS)
        kept['run'] = run
        result['ansible_facts'] = {'gpulab_node': kept}
        return result

    def _probe(self, node, probe_args, sections, task_vars):
        module_args = dict(probe_args)
        if sections is not None:
            module_args['sections'] = sections
        else:
            module_args.pop('sections', None)
        reply = self._execute_module(module_name='gpulab.rocm.node_probe', module_args=module_args,
                                     task_vars=task_vars)
        if reply.get('failed'):
            raise AnsibleActionFail('The node probe failed: %s' % reply.get('msg', 'no message'))
        for warning in reply.get('warnings') or []:
            self._display.warning(warning)
        probed = reply['ansible_facts']['gpulab_node']
        merged = dict(node) if sections is not None else {}
        read = set(merged.get('sections') or []) | set(probed.get('sections') or [])
        for key, value in probed.items():
            if key == 'paths' and isinstance(merged.get(key), dict):
                merged[key] = dict(merged[key], **value)
            else:
                merged[key] = value
        merged['sections'] = sorted(read)
        return merged


def _run_id():
    """This ansible-playbook run: the controller process that forked this worker, and when it started."""
    parent = os.getppid()
    try:
        with open('/proc/%d/stat' % parent) as handle:
            started = handle.read().rsplit(')', 1)[1].split()[19]
    except (IOError, OSError, IndexError):
        started = ''
    return '%d-%s' % (parent, started)


def _controller_machine_id():
    try:
        with open('/etc/machine-id') as handle:
            return handle.read().strip() or None
    except (IOError, OSError):
        return None
