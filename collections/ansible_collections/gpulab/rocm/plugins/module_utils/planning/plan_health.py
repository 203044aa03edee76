# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What rocm_health installs: gpulab-gpu-health (the collection's own module_utils, copied with their package
layout under /usr/lib/gpulab/python, and a small entry script) and its data file of expected values.

Why a copy of the module_utils and not a package or a pip install: the check must run on the node without Ansible
and without network, as root from Slurm; the same files the roles use are the ones the node runs, so a fix reaches
both in one run, and the folder is root's (0755, files 0644), so nothing a user controls is ever imported (the entry
script runs Python in isolated mode, -I: no PYTHONPATH, no user site, not the working folder). Pure apart from
reading the collection's own source files on the controller.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpulab.rocm.plugins.module_utils.node import health
from ansible_collections.gpulab.rocm.plugins.module_utils.planning import gpu_count, node_code
from ansible_collections.gpulab.rocm.plugins.module_utils.planning.plan_common import Plan, PlanError, file_matches

# The phase's contract (docs/plan-contract.md): the probe sections it reads, the keys of its result that its
# role reads, and how the plan pass treats it; planner.REGISTRY collects it.
PHASE = {
    'name': 'health',
    'role': 'rocm_health',
    'changes_host': True,
    # Plus 'paths' (plan_health.probe_needs): the installed program's files.
    'sections': ('os', 'gpus', 'health'),
    'keys': {
        'folders': 'Root-owned folders of the program to make.',
        'library': "The program's code to write (the collection's module_utils it runs), path to content.",
        'files': 'The expected values to write (the data file), path to content.',
        'scripts': 'The entry scripts to write (mode 0755), path to content.',
        'remove': ("Removed (state absent): files (to unlink), trees (folders removed with what they hold) and prune "
                   "(folders removed only where empty, deepest first)."),
    },
}


PROGRAM = '/usr/sbin/gpulab-gpu-health'
DATA = '/etc/gpulab/health.json'
LIB = node_code.LIB
STATE_DIR = '/var/lib/gpulab/health'
SLURM_PROGRAM = '/usr/sbin/gpulab-slurm-health'
# Slurm's Prolog where rocm_slurm_health_prolog is on (installed everywhere: this role does not read rocm_slurm's).
PROLOG_PROGRAM = '/usr/sbin/gpulab-slurm-prolog'
# The programs that run the shared node code (node_code.LIB), by the phase that installs them: the code goes with
# the last of them (rocm_metrics' writer is plan_metrics.CLI; test_plan_health holds the two the same).
ENTRY = node_code.entry_script('gpulab-gpu-health', 'the GPU health check', 'rocm_health', 'docs/health.md', LIB,
                               'health_run', 'main')
SLURM_ENTRY = node_code.entry_script('gpulab-slurm-health', "Slurm's HealthCheckProgram (drain, resume)", 'rocm_health',
                                     'docs/health.md', LIB, 'health_slurm', 'main')
PROLOG_ENTRY = node_code.entry_script('gpulab-slurm-prolog', "Slurm's Prolog (refuses a job on an unhealthy node)",
                                      'rocm_health', 'docs/health.md', LIB, 'health_slurm', 'prolog')
# The role's variables that go into the data file as they are (health.DEFAULTS names the keys).
_COPIED = ('link_policy', 'aer_correctable', 'max_uncorrectable_ecc', 'max_pending_bad_pages', 'rocminfo_timeout',
           'amd_smi_timeout', 'kfd_group', 'render_group', 'sysfs_root', 'dev_root', 'resume_limit',
           'resume_window_hours', 'kernel_log_source', 'kernel_log_max_bytes', 'kernel_log_hold_hours',
           'kernel_log_reset_loop_count', 'kernel_log_reset_loop_minutes', 'kernel_log_extra_rules')
_CLASS_KEYS = ('gpu_count', 'link_policy', 'aer_correctable', 'max_uncorrectable_ecc', 'max_pending_bad_pages',
               'rocminfo_timeout', 'amd_smi_timeout', 'resume_limit', 'resume_window_hours')


_NUMBERS = ('max_uncorrectable_ecc', 'max_pending_bad_pages', 'rocminfo_timeout', 'amd_smi_timeout', 'resume_limit',
            'resume_window_hours', 'kernel_log_max_bytes', 'kernel_log_hold_hours', 'kernel_log_reset_loop_count',
            'kernel_log_reset_loop_minutes')
# The kernel log's variables with a default (a wanted state from an older caller may lack them).
_OPTIONAL = dict((key, health.DEFAULTS[key]) for key in _COPIED if key.startswith('kernel_log_'))


def _number(value, key):
    try:
        return int(value)
    except (TypeError, ValueError):
        raise PlanError('rocm_health_%s must be a whole number, got %r. Nothing was changed.' % (key, value))


def folders():
    """Every folder of the installed program, top down (made root 0755 before the files)."""
    return ['/usr/lib/gpulab'] + node_code.folders(LIB) + ['/etc/gpulab', '/var/lib/gpulab', STATE_DIR]


def library_files():
    """{path on the node: content} of the shipped code (planning/node_code.py)."""
    return node_code.library_files(LIB)


def probe_paths():
    """Every path the plan compares (the probe's `paths` section describes them: type, owner, mode, sha1)."""
    return [PROGRAM, SLURM_PROGRAM, PROLOG_PROGRAM, DATA] + folders() + sorted(library_files())


def has_work(plan, wanted):
    """The check runs on every run where the role is asked to run it; removed (state absent), the role tidies the
    emptied folders of a run that stopped half way."""
    if absent(wanted):
        return bool((plan.get('remove') or {}).get('prune'))
    return bool(wanted.get('run'))


def probe_needs(node, wanted, stack, fresh=()):
    """The compared paths the probe has not described (removed: also the other users of the shared node code)."""
    paths = probe_paths() + ([STATE_DIR] + [path for users in node_code.CODE_USERS.values() for path in users]
                             if absent(wanted) else [])
    missing = [path for path in paths if path not in (node.get('paths') or {})]
    return {'sections': ['paths'], 'paths': sorted(set(missing))} if missing else None


def data(node, wanted, stack):
    """The data file's object: the node class's values over the role's, and the GPU count by gpu_count.expected()
    (the node class's gpu_count, else rocm_health_gpu_count, as the role's override).

    Returns (the checked values, the count's rule: gpu_count.expected's dict)."""
    classes = wanted.get('node_classes') or {}
    name = wanted.get('node_class') or ''
    if name and name not in classes:
        raise PlanError('rocm_health_node_class is %r, which rocm_health_node_classes does not define (it defines: '
                        '%s). Add the class or fix the name. Nothing was changed.'
                        % (name, ', '.join(sorted(classes)) or 'none'))
    chosen = classes.get(name) or {}
    unknown = sorted(set(chosen) - set(_CLASS_KEYS))
    if unknown:
        raise PlanError('rocm_health_node_classes[%r] has keys a node class cannot set: %s (it can set: %s). '
                        'Nothing was changed.' % (name, ', '.join(unknown), ', '.join(_CLASS_KEYS)))
    values = {'schema': health.SCHEMA, 'node_class': name, 'gpu_models': dict(wanted.get('gpu_models') or {})}
    for key in _COPIED:
        value = wanted.get(key, _OPTIONAL.get(key)) if key in _OPTIONAL else wanted[key]
        values[key] = _number(value, key) if key in _NUMBERS else value
    values.update((key, chosen[key]) for key in chosen if key != 'gpu_count')
    override, source = chosen.get('gpu_count'), 'the node class'
    if not (isinstance(override, int) and not isinstance(override, bool) and override >= 0):
        override, source = _number(wanted.get('gpu_count', -1), 'gpu_count'), 'rocm_health_gpu_count'
    rule = gpu_count.expected(node, stack, override, override_source=source,
                              variable='rocm_health_gpu_count or the node class\'s gpu_count')
    values['gpu_count'] = rule['count']
    try:
        checked = health.expected(values)
    except health.DataError as exc:
        raise PlanError('rocm_health: %s. Fix the rocm_health_* variable or the node class. Nothing was changed.'
                        % _variable_named(str(exc)))
    return checked, rule


def _variable_named(message):
    """The data file's key at the start of a DataError's message as the role variable that sets it
    ('kernel_log_source must be ...' -> 'rocm_health_kernel_log_source must be ...')."""
    for key in sorted(health.DEFAULTS, key=len, reverse=True):
        if message.startswith(key) and not message[len(key):len(key) + 1].isalnum() and \
                message[len(key):len(key) + 1] != '_':
            return 'rocm_health_' + message
    return message


def plan(node, wanted, stack, host=None, previous=None):
    """wanted: the role's variables (rocm_health_* without the prefix).

    Returns the Plan: folders, library (the program's code, 0644), files (the data file, 0644), scripts (0755), each
    only where it differs, and data (the expected values), count_source (where the GPU count comes from), summary."""
    if absent(wanted):
        return plan_absent(node)
    result = Plan('health')
    values, rule = data(node, wanted, stack)
    source = rule['source']
    paths = node.get('paths') or {}
    content = json.dumps(values, indent=1, sort_keys=True) + '\n'
    files = library_files()
    files[DATA] = content
    result.update(folders=[path for path in folders() if (paths.get(path) or {}).get('type') != 'directory'
                           or (paths[path].get('mode'), paths[path].get('uid')) != ('0755', 0)],
                  library={}, files={}, scripts={}, data=values, count_source=source)
    for path in result['folders']:
        result.change('make %s' % path, 'a folder of the health check (root, mode 0755)')
    for path in sorted(files):
        if not file_matches(paths.get(path), files[path]):
            result['files' if path == DATA else 'library'][path] = files[path]
            result.change('write %s' % path, 'the expected values changed' if path == DATA else
                          'the health check program differs from the collection\'s')
    for path, text in ((PROGRAM, ENTRY), (SLURM_PROGRAM, SLURM_ENTRY), (PROLOG_PROGRAM, PROLOG_ENTRY)):
        if not file_matches(paths.get(path), text, mode='0755'):
            result['scripts'][path] = text
            result.change('write %s' % path, 'an entry script of the health check')
    for notice in rule['notices']:
        result.warn('the health check: %s' % notice)
    result['summary'] = 'node class %s: %d GPU(s) expected (%s), degraded links %s' % (
        values['node_class'] or '(none)', values['gpu_count'], source,
        'fail' if values['link_policy'] == 'fail' else 'warn')
    return result


def absent(wanted):
    """Whether the role removes what it installed (rocm_health_state: absent)."""
    return wanted.get('state', 'present') == 'absent'


def plan_absent(node):
    """Removed (rocm_health_state: absent): the entry scripts, the data file, the state folder, the shared node code
    where rocm_metrics' writer does not need it, and our folders where nothing else is left in them. The Slurm lines
    that run the scripts are rocm_slurm's (playbooks/uninstall.yml takes them out first)."""
    result = Plan('health')
    result.update(folders=[], library={}, files={}, scripts={}, data=None, count_source=None,
                  remove={'files': [], 'trees': [], 'prune': []}, summary='removed (rocm_health_state: absent)')
    paths = node.get('paths') or {}
    for path in (PROGRAM, SLURM_PROGRAM, PROLOG_PROGRAM, DATA):
        info = paths.get(path) or {}
        if info.get('exists'):
            if info.get('type') not in ('file', 'symlink'):
                raise PlanError('rocm_health: %s is a %s, not the file the role wrote: root does not remove it. Remove '
                                'it yourself, or set rocm_health_state: present. Nothing was changed.'
                                % (path, info.get('type')))
            result['remove']['files'].append(path)
            result.change('remove %s' % path, 'rocm_health_state is absent')
    if (paths.get(STATE_DIR) or {}).get('exists'):
        result['remove']['trees'].append(STATE_DIR)
        result.change('remove %s' % STATE_DIR, "the check's state (its last result, AER and PCIe replay counters, the "
                      "kernel log's position and held findings, resumes)")
    node_code.code_removal(node, 'health', LIB, result)
    result['remove']['prune'] = ['/etc/gpulab', '/var/lib/gpulab'] + result['remove']['prune']
    node_code.prune_changes(node, result, 'only the health check\'s files were in it')
    return result
