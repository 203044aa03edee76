# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpulab-slurm-health: Slurm's HealthCheckProgram on a GPU node. Runs gpulab-gpu-health, then drains the node
with a reason that starts `gpulab: health:` and names the failing checks, or resumes it once its checks pass
again, but only a node whose reason is one of ours from a health check. An admin's drain (any other reason) and our
own maintenance drains (`gpulab: maintenance:`, which the upgrade play resumes) are never undone
here. A GPU that keeps failing and passing is resumed at most resume_limit times in resume_window_hours; then the
node stays drained with a `gpulab: health: flapping` reason until an admin resumes it (docs/health.md says why).

decide() is pure; main() reads Slurm's view of the node and runs scontrol, each call with a timeout. It always
exits 0: slurmd runs it before registering and, on some Slurm versions, again until it exits 0; the node's state is
what this program sets, not its exit status.

prolog() is gpulab-slurm-prolog, Slurm's Prolog where rocm_slurm_health_prolog is on: the same check before a job
starts, exit 1 when the node is not healthy, so that slurmd refuses the job. It calls no Slurm command (Slurm's
prolog guide asks prologs not to: a performance risk for every job start); Slurm itself drains the node, with its
own reason "Prolog error", and requeues the job. The prolog records its refusal (prolog.json), and the next health check takes
such a drain as its own: it gives it the `gpulab: health:` reason, or resumes the node once its checks pass.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import socket
import sys
import time

from ansible_collections.gpulab.rocm.plugins.module_utils.node import health, health_run
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import slurm_conf

MARK = 'gpulab:'
HEALTH_MARK = 'gpulab: health:'
FLAPPING = 'gpulab: health: flapping'
STATE_FILE = 'slurm.json'
PROLOG_FILE = 'prolog.json'
# The reason slurmctld gives a node whose Prolog failed (Slurm 22.05, node_mgr.c validate_node_specs).
PROLOG_REASON = 'Prolog error'
MAX_REASON = 200
_DRAINED = frozenset(['DRAIN', 'DRAINED', 'DRAINING', 'DOWN', 'FAIL', 'FAILING'])
_SLURMD_N = re.compile(r'^\s*SLURMD_OPTIONS=["\']?[^"\'\n]*?-N\s*([A-Za-z0-9_.-]+)', re.M)


def flags(state):
    """'IDLE+DRAIN' -> {'IDLE', 'DRAIN'}; 'DOWN*' -> {'DOWN'}."""
    return set(word.strip('*~#!%$@^-') for word in (state or '').upper().replace('+', ' ').split())


def own_reason(reason):
    """The reason without the '[user@time]' scontrol appends."""
    return re.sub(r'\s*\[[^\]]*@[^\]]*\]\s*$', '', reason or '').strip()


def health_reason(result):
    """'gpulab: health: RENDER_NODE,PCIE_LINK: <the first failing check's reason>', at most MAX_REASON long."""
    failing = health.failing(result['checks'])
    codes = ','.join(sorted(set(item['code'] for item in failing), key=[item['code'] for item in failing].index))
    text = '%s %s: %s' % (HEALTH_MARK, codes, failing[0]['reason']) if failing else '%s %s' % (
        HEALTH_MARK, result['verdict'])
    return text[:MAX_REASON].rstrip()  # scontrol keeps no trailing space: decide() compares the two


def decide(result, state, reason, resumes, now, limit, window_hours, refused=None):
    """(action, reason, why): action is 'drain', 'resume', 'hold' (stay drained, reason flapping) or 'none'.

    result: gpulab-gpu-health's result object; state and reason: the node's State and Reason as scontrol shows
    them; resumes: times (unix seconds) this program resumed the node; refused: the record of gpulab-slurm-prolog's
    last refusal of a job here (prolog.json), or None. Slurm's own "Prolog error" drain counts as ours only with
    that record: the role lets no other Prolog into slurm.conf, and the record is removed at the first healthy
    check."""
    drained = bool(flags(state) & _DRAINED)
    current = own_reason(reason)
    by_prolog = bool(refused) and current == PROLOG_REASON
    ours = current.startswith(HEALTH_MARK) or by_prolog
    if result['verdict'] != 'healthy':
        wanted = health_reason(result)
        if drained and not ours and current:
            return 'none', None, 'drained with a reason that is not a health check\'s (%s): left as it is' % current
        if drained and current == wanted:
            return 'none', None, 'already drained for the same checks'
        if by_prolog:
            return 'drain', wanted, ('checks failed; Slurm drained the node when the gpulab prolog refused job %s: '
                                     'the drain keeps the checks\' reason' % refused.get('job', '?'))
        return 'drain', wanted, 'checks failed'
    if not drained or not ours:
        other = '; drained for another reason (%s): left as it is' % (current or 'none')
        return 'none', None, 'healthy' + (other if drained else '')
    if current.startswith(FLAPPING):
        return 'none', None, 'flapping: an admin resumes it'
    recent = [moment for moment in resumes if now - moment < window_hours * 3600]
    if len(recent) >= limit:
        return 'hold', ('%s: resumed %d times in %g h; healthy now, an admin resumes it (scontrol update '
                        'NodeName=<node> State=RESUME)' % (FLAPPING, len(recent), window_hours))[:MAX_REASON], \
            'resumed too often'
    return 'resume', None, 'the checks pass again and the node was drained by a health check%s' % (
        ' (Slurm\'s drain for the gpulab prolog\'s refusal of job %s)' % refused.get('job', '?') if by_prolog else '')


def node_name(defaults='/etc/default/slurmd'):
    """slurmd's node name: SLURMD_NODENAME (slurmd sets it for its health check), -N in /etc/default/slurmd, or
    the short host name."""
    name = os.environ.get('SLURMD_NODENAME')
    if name:
        return name
    try:
        with open(defaults) as handle:
            match = _SLURMD_N.search(handle.read(65536))
        if match:
            return match.group(1)
    except (IOError, OSError):
        pass
    return socket.gethostname().split('.')[0]


def read_node(runner, find, scontrol, name):
    """([the node as Slurm shows it now], error): sinfo --json where Slurm has it (the reason a JSON string of its
    own), else scontrol show node -o with the reason read as its last field, never split (slurm_conf.read_node): no
    text of a reason decides the state this program acts on. Read right before the drain or resume."""
    entry, _how, error = slurm_conf.read_node(lambda argv: runner(argv, 15), name, scontrol, find('sinfo'))
    return ([entry] if entry else []), error


def main(argv=None, runner=health_run.run_tool, find=health_run.find_tool, now=None):
    """gpulab-slurm-health: exit 0 whatever happens (an error is logged on stderr; the node's state stays as it
    is), as slurmd expects of its HealthCheckProgram."""
    try:
        return _check_and_set(argv, runner, find, now)
    except Exception as exc:  # pylint: disable=broad-except
        try:
            health_run.say('gpulab-slurm-health: internal error, node not drained or resumed: %s: %s'
                           % (type(exc).__name__, str(exc)[:300]), sys.stderr)
        except Exception:  # pylint: disable=broad-except
            pass  # stderr itself is gone: nothing left to tell
        return 0


def _check_and_set(argv, runner, find, now):
    argv = sys.argv[1:] if argv is None else argv
    data = argv[argv.index('--data') + 1] if '--data' in argv else health_run.DATA
    state_dir = argv[argv.index('--state-dir') + 1] if '--state-dir' in argv else health_run.STATE_DIR
    name = node_name()
    scontrol = find('scontrol')
    result = health_run.run(data, state_dir, find, runner)
    if not scontrol:
        health_run.say('gpulab-slurm-health: scontrol not found: node %s not drained or resumed' % name, sys.stderr)
        return 0
    try:
        nodes, error = read_node(runner, find, scontrol, name)
    except health_run.Timeout:
        health_run.say('gpulab-slurm-health: scontrol show node did not answer', sys.stderr)
        return 0
    if error:
        health_run.say('gpulab-slurm-health: Slurm does not know node %s: %s' % (name, error[:200]), sys.stderr)
        return 0
    path = os.path.join(state_dir, STATE_FILE)
    try:
        history = health_run.read_json(path) or {}
    except health.DataError:
        history = {}
    resumes = [moment for moment in history.get('resumes') or [] if isinstance(moment, (int, float))]
    try:
        want = health.expected(health_run.read_json(data) or {})
    except (health.DataError, IOError, OSError):
        want = health.expected({})
    now = time.time() if now is None else now
    refused_path = os.path.join(state_dir, PROLOG_FILE)
    try:
        refused = health_run.read_json(refused_path)
    except health.DataError:
        refused = {'job': '?'}
    action, reason, why = decide(result, nodes[0].get('State'), nodes[0].get('Reason'), resumes, now,
                                 want['resume_limit'], want['resume_window_hours'],
                                 refused if isinstance(refused, dict) else None)
    update = {'drain': ['State=DRAIN', 'Reason=%s' % reason], 'hold': ['State=DRAIN', 'Reason=%s' % reason],
              'resume': ['State=RESUME']}.get(action)
    if update:
        try:
            rc, out, err = runner([scontrol, 'update', 'NodeName=%s' % name] + update, 15)
        except health_run.Timeout:
            rc, err = 124, 'timed out'
        if rc != 0:
            health_run.say('gpulab-slurm-health: scontrol update %s failed: %s'
                           % (action, (err or out).strip()[:200]), sys.stderr)
            return 0
        if action == 'resume':
            resumes.append(now)
            window = want['resume_window_hours'] * 3600
            health_run.write_json(path, {'resumes': [moment for moment in resumes if now - moment < window]})
    if result['verdict'] == 'healthy' and os.path.lexists(refused_path):
        os.unlink(refused_path)  # the prolog's refusal is over: a later "Prolog error" is not ours
    health_run.say('gpulab-slurm-health: node %s %s: %s (%s)' % (name, result['verdict'], action, why))
    return 0


def prolog(argv=None, runner=health_run.run_tool, find=health_run.find_tool, now=None):
    """gpulab-slurm-prolog: 0 on a healthy node; else 1 (slurmd refuses the job, Slurm drains the node and requeues
    the job) after recording the refusal in prolog.json for the next health check. A check that cannot run (exit 2
    of gpulab-gpu-health) refuses too: the periodic check drains such a node as well."""
    argv = sys.argv[1:] if argv is None else argv
    data = argv[argv.index('--data') + 1] if '--data' in argv else health_run.DATA
    state_dir = argv[argv.index('--state-dir') + 1] if '--state-dir' in argv else health_run.STATE_DIR
    try:
        result = health_run.run(data, state_dir, find, runner)
    except (IOError, OSError) as exc:
        health_run.say('gpulab-slurm-prolog: cannot write %s: %s' % (state_dir, exc), sys.stderr)
        return 1
    if result['verdict'] == 'healthy':
        return 0
    job = os.environ.get('SLURM_JOB_ID') or ''
    job = job if re.fullmatch(r'[0-9]{1,12}', job) else '?'
    reason = health_reason(result)
    health_run.write_json(os.path.join(state_dir, PROLOG_FILE), {
        'time': round(time.time() if now is None else now, 3), 'job': job, 'reason': reason})
    health_run.say('gpulab-slurm-prolog: job %s refused on node %s: %s' % (job, node_name(), reason), sys.stderr)
    return 1
