# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab.rocm.plan: probe the node once, then plan one phase (docs in plugins/modules/plan.py).

Glue only: the stack-wide inputs come from the host's variables (module_utils/planning/stack.py declares them), the node's
state from gpulab.rocm.node_probe (kept as the host fact gpulab_node, marked with this run so that a fact cache
never serves an older run's probe), the decisions from module_utils/planning/planner.py.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os

import yaml

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_pass as passes, planner, role_spec, stack
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError

# Read again for every planning call that needs them: valid only at that moment.
EPHEMERAL_SECTIONS = ('candidates', 'autoremove', 'fix_broken')
# Where the plan pass finds a role's inputs (docs/plan-contract.md): the role's wanted state and its probe
# arguments, in its vars/main.yml, which a role imported into the play shares with it.
WANTED_VAR = '__%s_wanted'
PROBE_VAR = '__%s_probe'
# libyaml's loader where PyYAML was built with it: each plan call runs in a task worker of its own, where Ansible's
# data loader would parse a role's argument_specs.yml again with origin tags and return a deep copy (about 15 ms a
# call, a dozen calls a run).
_SPEC_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


class ActionModule(ActionBase):

    TRANSFERS_FILES = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        _valid, args = self.validate_argument_spec(argument_spec={
            'phase': dict(type='str', choices=list(planner.PHASES)),
            'pass': dict(type='list', elements='str', choices=list(planner.PHASES), default=[]),
            'gate': dict(type='bool', default=False),
            'wanted': dict(type='dict', default={}),
            'probe': dict(type='dict', default={}),
            'refresh': dict(type='list', elements='str', default=[]),
            'stats_key': dict(type='str', default=''),
        })
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        run, node = this_run_node(task_vars)
        if args['gate']:
            return self._gate(result, node, task_vars)
        if args['pass']:
            return self._pass(result, args['pass'], node, run, task_vars)
        if not args['phase']:
            raise AnsibleActionFail('phase is required (unless pass or gate is given)')
        result = self._plan(result, args, node, run, task_vars, getattr(self._task, '_role', None))
        if args['stats_key'] and 'stats' in result and not result.get('refused'):
            # As set_stats does (per_host false, aggregate true): one entry per host under the key, for AWX.
            result['ansible_stats'] = {'data': {args['stats_key']: {task_vars.get('inventory_hostname'):
                                                                    result['stats']}},
                                       'per_host': False, 'aggregate': True}
        return result

    def _pass(self, result, phases, node, run, task_vars):
        """The plan pass of a play in one call: probe the host, plan each phase that the run's tags select with its
        role's inputs (the role is imported into the play), then the gate (docs/plan-contract.md)."""
        play = self._task.get_play()
        chosen = passes.tagged(phases, tag_runs(self._task, play.only_tags, play.skip_tags, task_vars))
        if not chosen:
            # Nothing of the pass is asked for (--tags facts): no probe, and no pass for the play's loop of roles.
            result.update(changed=False, planned=[], msg='no phase of the plan pass is among the tags of this run',
                          ansible_facts={'gpulab_node': {'run': run}})
            return result
        roles = dict((role.get_name(include_role_fqcn=False), role) for role in play.get_roles())
        inputs = _stack_inputs(self._templar, task_vars)
        node = dict(node, run=run, **{'pass': {}})
        for phase in chosen:
            name = planner.CONTRACT[phase]['role']
            if name not in roles:
                raise AnsibleActionFail(
                    'the plan pass names %s, but this play does not import the role %s, whose variables the pass '
                    'reads: import it in the play (ansible.builtin.import_role, tags: [never]; docs/plan-contract.md)'
                    % (phase, name))
            role_inputs = dict((key, self._templar.template(task_vars.get(var % name) or {}))
                               for key, var in (('wanted', WANTED_VAR), ('probe', PROBE_VAR)))
            refresh = ['all'] if planner.CONTRACT[phase].get('reads_all') else []
            planned = self._plan({}, dict(role_inputs, phase=phase, refresh=refresh),
                                 node, run, task_vars, roles[name], in_pass=True, inputs=inputs)
            node = (planned.get('ansible_facts') or {}).get('gpulab_node') or node
        return self._gate(result, node, task_vars)

    def _plan(self, result, args, node, run, task_vars, role, in_pass=False, inputs=None):
        """Plan args['phase'] for this host (role: the Role whose variables it checks, or None): the pass's plan
        where it still holds, else a new one. in_pass: a refusal is kept for the gate. inputs: the stack-wide
        inputs where the caller resolved them already (the pass, once for all its phases)."""
        if inputs is None:
            inputs = _stack_inputs(self._templar, task_vars)
        phase = args['phase']
        node = dict((key, value) for key, value in node.items() if key not in EPHEMERAL_SECTIONS)
        host = {'name': task_vars.get('inventory_hostname'),
                'connection': self._play_context.connection,
                'controller_machine_id': _controller_machine_id(),
                'check_mode': bool(self._task.check_mode)}
        key = _digest([phase, args['wanted'], inputs, args['probe'], host])
        memo = (node.get('plans') or {}).get(phase) or {}
        if not in_pass and not args['refresh'] and passes.still_holds(memo, key, node.get('read_at')):
            # Planned from these very inputs, and nothing was read again since: the plan pass's plan. The host fact
            # is left as it is (no copy of it goes back: the cheap path of a converged run).
            result = self._planned(result, phase, dict(memo['plan'], planned_in='plan pass'), node, run, inputs)
            del result['ansible_facts']
            return result

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
        needs = planner.probe_needs(phase, node, args['wanted'], inputs, fresh)
        if needs:
            probe_args.update((key_, value) for key_, value in needs.items() if key_ != 'sections')
            node = self._probe(node, probe_args, needs['sections'], task_vars)

        plan_pass = node.get('pass') or {}
        try:
            self._check_role_variables(role, task_vars)
            plan = planner.plan(phase, node, args['wanted'], inputs, host, previous=memo.get('plan'))
        except PlanError as exc:
            messages = [passes.claim_free(text) for text in getattr(exc, 'problems', None) or [str(exc)]]
            message = ' '.join(text.rstrip('.') + '.' for text in messages) if len(messages) > 1 else messages[0]
            if not in_pass:
                raise AnsibleActionFail(message + ' ' + passes.already_changed(phase, plan_pass, host['check_mode']))
            # The plan pass: keep the refusal for the gate, which lists every phase's at once (each problem of a
            # phase that found several).
            node['pass'] = passes.record(plan_pass, phase, refusals=messages)
            result.update(phase=phase, refused=messages, changed=False, msg='%s refuses: %s' % (phase, message))
            result['ansible_facts'] = {'gpulab_node': dict(node, run=run)}
            return result

        # A phase that refuses by listing its problems (preflight) keeps them for the gate, in a pass or alone.
        refused = planner.refusals(phase, plan)
        if in_pass or refused:
            node['pass'] = passes.record(plan_pass, phase, [item['change'] for item in plan.get('changes') or []],
                                         refused, planner.has_work(phase, plan, args['wanted']),
                                         plan.get('notices') or [], off=bool(plan.get('skip')))
        if not in_pass:
            # Planned at the role's own turn: what it says needs attention, but what the gate showed already.
            node = self._show_notices(node, {phase: plan.get('notices') or []}, host['name'])
        memo = {'key': key, 'read_at': node.get('read_at') or {}, 'plan': plan}
        node['plans'] = dict(node.get('plans') or {}, **{phase: memo})
        return self._planned(result, phase, plan, node, run, inputs)

    def _check_role_variables(self, role, task_vars):
        """The role's variables against its argument_specs.yml `main` options (the entry point that documents them) and
        the constraints beside them (meta/input_constraints.yml, role_spec.py): a PlanError naming each one that does
        not match. A plan called outside a role checks nothing here."""
        path = os.path.join(role.get_role_path() if role is not None else '', 'meta', 'argument_specs.yml')
        if role is None or not os.path.isfile(path):
            return
        options = main_options(path)
        values = self._templar.template(dict((name, task_vars[name]) for name in options if name in task_vars))
        messages = role_spec.errors(options, values, input_constraints(os.path.join(os.path.dirname(path),
                                                                                    role_spec.CONSTRAINTS_FILE)))
        if messages:
            raise PlanError(role_spec.refusal(role.get_name(include_role_fqcn=False), messages))

    def _planned(self, result, phase, plan, node, run, inputs):
        result.update(plan)
        result['phase'] = phase
        result['stack'] = inputs
        result['changed'] = False
        result['msg'] = '%s: %s' % (phase, '; '.join(
            '%s (%s)' % (item['change'], item['reason']) for item in plan.get('changes') or []) or 'nothing to change')
        # The node's state for the later phases of this run.
        kept = dict((key, value) for key, value in node.items() if key not in EPHEMERAL_SECTIONS)
        kept['run'] = run
        result['ansible_facts'] = {'gpulab_node': kept}
        return result

    def _gate(self, result, node, task_vars):
        """Stop the host when any phase of the plan pass refused: every problem of every phase in one message."""
        plan_pass = node.get('pass') or {}
        result.update(changed=False, planned=plan_pass.get('order') or [], refusals=plan_pass.get('refusals') or {},
                      notices=passes.notices(plan_pass))
        try:
            release = _stack_inputs(self._templar, task_vars)['version']
        except AnsibleActionFail:
            release = None
        message = passes.gate_message(task_vars.get('inventory_hostname'), release, plan_pass)
        if message:
            result.update(failed=True, msg=message)
            return result
        # What the play applies after the gate (provision.yml skips the other roles whole).
        result['apply'] = passes.applies(plan_pass)
        result['msg'] = 'every phase is planned (%s): nothing refuses; to apply: %s' % (
            ', '.join(result['planned']) or 'none', ', '.join(result['apply']) or 'none')
        # Every phase's notices at once (the roles it skips included).
        kept = self._show_notices(dict(node, run=run_id()), passes.phase_notices(plan_pass),
                                  task_vars.get('inventory_hostname'))
        kept['pass'] = dict(plan_pass, apply=result['apply'])
        result['ansible_facts'] = {'gpulab_node': kept}
        return result

    def _show_notices(self, node, notices, host):
        """Each phase's notices (phase -> list) not shown yet in this run, as warnings naming the host (Ansible
        shows a warning's text once per run); returns the node with them recorded as shown."""
        shown = dict((phase, list(lines)) for phase, lines in (node.get('shown_notices') or {}).items())
        for line in passes.unshown(notices, shown):
            self._display.warning(passes.printable('%s: %s' % (host, line)))
        return dict(node, shown_notices=shown)

    def _probe(self, node, probe_args, sections, task_vars):
        module_args = dict(probe_args)
        if sections is not None:
            module_args['sections'] = sections
        else:
            module_args.pop('sections', None)
            module_args['paths'] = sorted(set(module_args.get('paths') or []) | set(planner.probe_paths()))
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
        # When each section was last read: a plan made before a section it had was read again is planned anew.
        count = (node.get('reads') or 0) + 1
        merged['reads'] = count
        merged['read_at'] = dict(merged.get('read_at') or {}, **dict(
            (section, count) for section in (probed.get('sections') or sections or [])))
        return merged


def tag_runs(task, only_tags, skip_tags, task_vars):
    """runs(tag, with_only_tags): whether a task tagged with tag in this task's place (so with the tags it inherits,
    such as site.yml's `provision`) would run under the run's --skip-tags and, when with_only_tags, its --tags:
    Ansible's own Taggable.evaluate_tags, on a copy of the task."""
    def runs(tag, with_only_tags):
        probe = task.copy(exclude_parent=False, exclude_tasks=True)
        probe.tags = [tag]
        return probe.evaluate_tags(only_tags if with_only_tags else ['all'], skip_tags, task_vars)
    return runs


def main_options(path):
    """The `main` entry point's options of a role's meta/argument_specs.yml (plain YAML, never vaulted); {} where
    the file has none."""
    with open(path, 'rb') as handle:
        specs = yaml.load(handle, Loader=_SPEC_LOADER) or {}
    return ((specs.get('argument_specs') or {}).get('main') or {}).get('options') or {}


def input_constraints(path):
    """The `constraints` of a role's meta/input_constraints.yml (role_spec.CONSTRAINTS_FILE); {} without the file."""
    if not os.path.isfile(path):
        return {}
    with open(path, 'rb') as handle:
        return (yaml.load(handle, Loader=_SPEC_LOADER) or {}).get('constraints') or {}


def _stack_inputs(templar, task_vars):
    """The stack-wide inputs from the host's variables, their defaults applied (a bad one fails the task)."""
    try:
        return stack.resolve(dict((name, templar.template(task_vars[name]))
                                  for name in stack.DEFAULTS if name in task_vars))
    except stack.StackError as exc:
        raise AnsibleActionFail(str(exc))


def _digest(value):
    return hashlib.sha1(json.dumps(value, sort_keys=True, default=str).encode('utf-8')).hexdigest()


def this_run_node(task_vars):
    """(this run's id, the host's probe kept by this run): a fact cache's probe of an earlier run is never used."""
    run = run_id()
    node = (task_vars.get('ansible_facts') or {}).get('gpulab_node')
    return run, (node if isinstance(node, dict) and node.get('run') == run else {})


def run_id():
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
