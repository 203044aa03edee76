# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The plan pass of a play and its gate (docs/plan-contract.md): what the pass keeps of each phase, the gate's one
message, what a refusal after the gate says was already changed, and when a plan made earlier still holds. Pure;
the plan action keeps the pass in the host fact gpulab_node['pass']: {'order', 'changes', 'work', 'notices',
'refusals'}, and the gate adds 'apply'."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import planner

_CLAIM = ' Nothing was changed.'


def claim_free(message):
    """A phase's refusal without a claim about the host: where it is raised decides what was changed."""
    return message[:-len(_CLAIM)] if message.endswith(_CLAIM) else message


def record(plan_pass, phase, changes=(), refusals=(), work=True, notices=(), off=False):
    """The pass with this phase planned (in the order the play plans, which is the order it applies); work: whether
    its role has anything to do after the gate (planner.has_work); notices: what its plan says needs attention (the
    gate shows every phase's at once); off: its role is switched off here (its plan's `skip`: it applies only with
    work of its own)."""
    plan_pass = dict(plan_pass or {})
    plan_pass['off'] = [p for p in plan_pass.get('off') or [] if p != phase] + ([phase] if off else [])
    plan_pass['notices'] = dict(plan_pass.get('notices') or {}, **{phase: list(notices)})
    plan_pass['order'] = [p for p in plan_pass.get('order') or [] if p != phase] + [phase]
    plan_pass['changes'] = dict(plan_pass.get('changes') or {}, **{phase: list(changes)})
    plan_pass['work'] = dict(plan_pass.get('work') or {}, **{phase: bool(work or changes)})
    kept = dict((p, v) for p, v in (plan_pass.get('refusals') or {}).items() if p != phase)
    if refusals:
        kept[phase] = list(refusals)
    plan_pass['refusals'] = kept
    return plan_pass


def phase_notices(plan_pass):
    """Each phase's notices (phase -> list), in the order of the play."""
    noticed = (plan_pass or {}).get('notices') or {}
    return dict((phase, noticed.get(phase) or []) for phase in (plan_pass or {}).get('order') or [])


def notices(plan_pass):
    """Every phase's notices, in the order of the play, each once, named by its phase."""
    return unshown(phase_notices(plan_pass), {})


def unshown(notices, shown):
    """The lines of notices (phase -> list, in the play's order) that shown (phase -> list, updated in place) does
    not hold yet, each as 'phase: notice', each once."""
    lines = []
    for phase, items in notices.items():
        for notice in items or []:
            if notice in shown.get(phase, []):
                continue
            shown.setdefault(phase, []).append(notice)
            line = '%s: %s' % (phase, _unprefixed(notice, phase))
            if line not in lines:
                lines.append(line)
    return lines


def printable(text):
    """text with its control characters (C0, DEL, C1) written as escapes: a notice can quote what a lab user named
    (a file, a marker line), and a warning reaches the admin's terminal as it is."""
    return ''.join(char if not (ord(char) < 0x20 or 0x7f <= ord(char) < 0xa0) else
                   (r'\x%02x' % ord(char)) for char in text)


def _declared(phase, key, default=None):
    return planner.CONTRACT[phase].get(key, default)


def applies(plan_pass):
    """The phases whose roles the play applies after the gate, in order: each one with work of its own, and every one
    after a phase that changes something (its role plans again from what that change left), but for the phases
    declared own_work_only (planned after the others, it read their changes already) and the roles switched off on
    this host. On a converged host: only the roles that check or report on every run."""
    changes = (plan_pass or {}).get('changes') or {}
    work = (plan_pass or {}).get('work') or {}
    off = set((plan_pass or {}).get('off') or ())
    chosen, changed = [], False
    for phase in (plan_pass or {}).get('order') or []:
        own_work_only = phase in off or _declared(phase, 'own_work_only', False)
        if work.get(phase, True) or (changed and not own_work_only):
            chosen.append(phase)
        changed = changed or bool(changes.get(phase))
    return chosen


def tagged(phases, runs):
    """The phases of the pass that the run's --tags and --skip-tags select, in order. runs(tag): whether a task of
    the play tagged with tag would run (the action asks Ansible itself). A phase is selected by its own tag; one
    declared selected 'with_any_phase' (the probe's checks) also goes with any other selected phase unless its own
    tag is skipped, and one declared 'with_any_role' (the maintenance) goes with any selected phase whose role
    applies. The pass is tagged `always` in the play, so that it runs under any tag; a run whose tags select no
    phase gets none."""
    own = [phase for phase in phases if runs(phase, True)]
    roles = [phase for phase in own if _declared(phase, 'applies', 'role') == 'role']
    chosen = []
    for phase in phases:
        selected = _declared(phase, 'selected')
        if selected == 'with_any_phase':
            pick = phase in own or (bool(roles) and runs(phase, False))
        elif selected == 'with_any_role':
            pick = bool(roles)
        else:
            pick = phase in roles
        if pick:
            chosen.append(phase)
    return chosen


def _unprefixed(problem, phase):
    for prefix in ('%s: ' % phase, 'rocm_%s: ' % phase):
        if problem.startswith(prefix):
            return problem[len(prefix):]
    return problem


def gate_message(host, release, plan_pass):
    """The gate's message, or None when no phase refused. Every problem once, numbered, with the phases that
    found it (the same problem of several phases, such as not being root, once)."""
    refusals = (plan_pass or {}).get('refusals') or {}
    if not refusals:
        return None
    order = (plan_pass or {}).get('order') or []
    lines = {}
    for phase in order + sorted(p for p in refusals if p not in order):
        for problem in refusals.get(phase) or []:
            lines.setdefault(_unprefixed(problem, phase), []).append(phase)
    return ('%s is not ready%s: %d problem%s, found by planning every phase before any change, so nothing was '
            'changed. %s' % (host, ' for ROCm %s' % release if release else '', len(lines),
                             '' if len(lines) == 1 else 's', ' '.join(
                                 '(%d) %s: %s' % (number, ', '.join(phases), problem.rstrip('.') + '.')
                                 for number, (problem, phases) in enumerate(lines.items(), 1))))


def already_changed(phase, plan_pass, check_mode=False):
    """What this run changed before a refusal at a phase's own turn: the plan pass's changes of the phases before it
    (a play stops a host at its first failure, so each of them applied what its plan listed)."""
    order = (plan_pass or {}).get('order') or []
    if phase not in order:
        return ('This phase was not in a plan pass of this play: the roles before it may have changed the host; '
                'look at the changed tasks above.')
    changes = plan_pass.get('changes') or {}
    done = ['%s (%s)' % (p, '; '.join(changes[p])) for p in order[:order.index(phase)] if changes.get(p)]
    if not done:
        return 'No phase before it had anything to change in this run.'
    return '%s in this run before it: %s.' % (
        'Check mode: would have been changed' if check_mode else 'Already changed', ', '.join(done))


def still_holds(memo, key, read_at):
    """Whether a plan made earlier (memo: {'key', 'read_at', 'plan'}) holds now: made from the same inputs (key), and
    no probe section it had was read again since (read_at: section -> the reading that last read it)."""
    if not memo or memo.get('key') != key:
        return False
    return all((read_at or {}).get(section) == count for section, count in (memo.get('read_at') or {}).items())
