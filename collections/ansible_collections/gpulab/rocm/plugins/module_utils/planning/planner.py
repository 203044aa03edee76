# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The planner: the registry of the phases and the loop that plans one. Each phase is one module plan_<phase>.py that
declares itself (its PHASE: name, role, probe sections, result keys, and how the plan pass treats it) and plans with
one signature, plan(node, wanted, stack, host, previous); it may add probe_needs() (what to read beyond its
sections), has_work() (a check of its own on a converged run) and probe_paths() (paths a whole probe describes).
Pure; gpulab.rocm.plan is its only caller in the roles. A new phase is one new module in PHASE_MODULES and its role
(docs/plan-contract.md)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import (
    plan_access, plan_containers, plan_driver, plan_env, plan_health, plan_maintenance, plan_metrics, plan_modules,
    plan_partition, plan_preflight, plan_repo, plan_report, plan_sdk, plan_slurm, plan_slurm_node, plan_validate,
    plan_verify,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import plan_tuning
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import PlanError

# The registry's list: every phase, in the order of the plan module's documentation.
PHASE_MODULES = (plan_preflight, plan_repo, plan_driver, plan_sdk, plan_partition, plan_access, plan_env, plan_modules,
                 plan_containers, plan_health, plan_metrics, plan_tuning, plan_verify, plan_report, plan_validate,
                 plan_maintenance, plan_slurm_node, plan_slurm)
REGISTRY = dict((module.PHASE['name'], module) for module in PHASE_MODULES)
PHASES = tuple(REGISTRY)

# The contract between the planner and the roles (docs/plan-contract.md), one entry per phase from its module's
# PHASE: the probe sections it reads (a phase whose sections the node lacks gets them probed first) and the keys of
# its result that a role may read, each with its line of documentation. The plan module's RETURN is generated from it
# (tests/tools/plan_return.py) and tests/test_plan_contract.py holds the roles to it.
CONTRACT = dict((name, module.PHASE) for name, module in REGISTRY.items())
COMMON_KEYS = {
    'phase': 'The phase planned.',
    'changes': 'What the phase changes, each as C(change) and C(reason); empty when the host is converged.',
    'notices': ('Things worth knowing that change nothing, shown as warnings naming the host (by the gate, or by '
                'a plan outside a plan pass for what is new); their own key, as Ansible keeps C(warnings) for its '
                'own.'),
    'stack': 'The stack-wide inputs, with their defaults applied.',
    'msg': 'The changes in one line.',
    'planned_in': 'V(plan pass) when the plan is the one the plan pass computed from the same inputs (no reading of '
                  'the host since); absent when it was planned in this call.',
    'refused': "Only in the plan pass: the phase's problems, kept for the gate (the other keys are then absent).",
}
SECTIONS = dict((phase, entry['sections']) for phase, entry in CONTRACT.items())


def refusals(phase, plan):
    """The problems in a plan that stop the host at the gate: a phase refuses by raising PlanError, or by listing its
    problems under the key its PHASE names as 'gate'."""
    key = CONTRACT[phase].get('gate')
    return list(plan.get(key) or []) if key else []


def has_work(phase, plan, wanted):
    """Whether the role's tasks after its plan have anything to do on this run: a change, or a check of its own that
    the phase's has_work() finds (what its role's tasks/main.yml acts on; its notices the gate shows). A play with a
    plan pass skips a role with no work whose phases before it change nothing (plan_pass.applies)."""
    if plan.get('changes'):
        return True
    own = getattr(REGISTRY[phase], 'has_work', None)
    return bool(own(plan, wanted)) if own else False


def probe_paths():
    """The paths a whole probe describes for the phases that compare files whatever their variables say, so that
    their plans in the plan pass need no second read of the host."""
    paths = []
    for module in PHASE_MODULES:
        paths += getattr(module, 'probe_paths', lambda: [])()
    return paths


def probe_needs(phase, node, wanted, stack, fresh=()):
    """Extra node_probe arguments a phase needs beyond what the node holds, or None: the sections of its contract the
    node lacks, those derived from packages read again since, and what the phase's own probe_needs() adds.

    fresh: the sections read during this planning call (they are current).
    """
    missing = [section for section in SECTIONS[phase] if section not in (node.get('sections') or [])]
    read_at = node.get('read_at') or {}
    # Sections that describe what packages put on the host: read again when 'packages' was read after them (a package
    # change after the plan pass), so the phase plans from the releases now installed.
    missing += [section for section in CONTRACT[phase].get('derived_from_packages', ())
                if section not in missing and section not in fresh
                and read_at.get('packages', 0) > read_at.get(section, 0)]
    own = getattr(REGISTRY[phase], 'probe_needs', None)
    extra = own(node, wanted, stack, fresh) if own else None
    if not missing and not extra:
        return None
    args = {'sections': missing}
    if extra:
        args['sections'] = sorted(set(missing + extra['sections']))
        args.update((key, value) for key, value in extra.items() if key != 'sections')
    return args


def plan(phase, node, wanted, stack, host=None, previous=None):
    """The plan of one phase. host: {'name', 'connection', 'controller_machine_id', 'check_mode'} from the action;
    previous: this phase's last plan in this run (a second look at the host continues from it), or None.

    Raises PlanError when the wanted state is invalid (the message names the variable and the fix; what was
    changed is for the caller to say: the gate says nothing was, a refusal at a phase's own turn what was).
    """
    module = REGISTRY.get(phase)
    if module is None:
        raise PlanError('unknown phase %r; one of %s' % (phase, ', '.join(PHASES)))
    euid = (node.get('os') or {}).get('euid')
    if module.PHASE['changes_host'] and euid not in (0, None):
        raise PlanError('%s: this run is not root on the host (uid %s): the roles change system files, packages '
                        'and groups. Run with become: true (the playbooks set it; check that the remote user may '
                        'sudo) or as root.' % (phase, euid))
    return module.plan(node, wanted, stack, host or {}, previous)
