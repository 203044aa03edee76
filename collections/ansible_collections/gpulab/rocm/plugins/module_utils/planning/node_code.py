# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's code that runs on the nodes as root outside Ansible, and how it gets there and goes again: one
list, one folder, removed with the last program that runs it.

The programs are in module_utils/node/ (the health check, run by its systemd timer, Slurm's HealthCheckProgram and
Prolog; the metrics writer, run by its timer). They import the parsers and one host helper; SHIPPED is that closed
set (test_node_code checks it against the imports). rocm_health and rocm_metrics both write it, in its package
layout, under LIB, from the collection of the same run: the same files, so the second writer finds them in place.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

LIB = '/usr/lib/gpulab/python'
PACKAGE = 'ansible_collections/gpulab/rocm/plugins/module_utils'
# Each module as its path under module_utils, without .py: the programs, then what they import.
SHIPPED = (
    'node/health', 'node/health_run', 'node/health_slurm', 'node/metrics_textfile',
    'parsers/_facts_common', 'parsers/amd_smi', 'parsers/firmware', 'parsers/gfx', 'parsers/gpu_sysfs',
    'parsers/gpu_tools', 'parsers/pci', 'parsers/rocm_smi', 'parsers/rocminfo', 'parsers/slurm_conf',
    'host/root_files',
)
# The programs that run the shipped code, by the phase that installs them: the code goes with the last of them.
CODE_USERS = {'health': ('/usr/sbin/gpulab-gpu-health', '/usr/sbin/gpulab-slurm-health', '/usr/sbin/gpulab-slurm-prolog'),
              'metrics': ('/usr/local/sbin/gpulab-metrics-textfile',)}
_SOURCE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def packages():
    """Every package folder of the shipped code, relative to the install folder, top down."""
    parts = PACKAGE.split('/')
    found = ['/'.join(parts[:end]) for end in range(1, len(parts) + 1)]
    for name in SHIPPED:
        sub = '%s/%s' % (PACKAGE, name.rsplit('/', 1)[0])
        if sub not in found:
            found.append(sub)
    return found


def folders(install_dir=LIB):
    """The install folder and its package folders, top down (made root 0755 before the files)."""
    return [install_dir] + ['%s/%s' % (install_dir, package) for package in packages()]


def library_files(install_dir=LIB, source_dir=None):
    """{path on the node: content}: the shipped modules and an empty __init__.py in each package folder."""
    source_dir = source_dir or _SOURCE
    files = dict(('%s/%s/__init__.py' % (install_dir, package), '') for package in packages())
    for name in SHIPPED:
        with open(os.path.join(source_dir, name + '.py')) as handle:
            files['%s/%s/%s.py' % (install_dir, PACKAGE, name)] = handle.read()
    return files


def entry_script(name, what, role, doc, install_dir, module, call):
    """A program's entry script: Python in isolated mode (no user site, no PYTHON* variables), the shipped code
    first on its path."""
    return ('#!/usr/bin/python3 -I\n'
            '# %s: %s of gpulab.rocm (%s). Installed by the %s role;\n'
            '# the code is the collection\'s module_utils under %s.\n'
            'import sys\n'
            'sys.path.insert(0, %r)\n'
            'from ansible_collections.gpulab.rocm.plugins.module_utils.node import %s  # noqa: E402\n'
            'sys.exit(%s.%s())\n' % (name, what, doc, role, install_dir, install_dir, module, module, call))


def exists(info):
    """Whether the probe saw something at a path (a path it did not describe counts as there: nothing is assumed
    gone)."""
    return info is None or info.get('exists') is not False


def code_kept_for(node, phase):
    """Why the shared node code (LIB) stays when `phase` removes its programs: another phase's program is
    on the node and this run's plan pass does not remove it; None when the code can go."""
    paths = node.get('paths') or {}
    going = (node.get('pass') or {}).get('changes') or {}
    for other, programs in sorted(CODE_USERS.items()):
        if other == phase:
            continue
        left = [path for path in programs
                if exists(paths.get(path)) and 'remove %s' % path not in (going.get(other) or [])]
        if left:
            return '%s (role rocm_%s) still runs it' % (', '.join(left), other)
    return None


def code_removal(node, phase, install_dir, result):
    """The shared node code under install_dir into a removal plan: its package tree (install_dir/ansible_collections,
    the collection's layout) removed whole, install_dir and /usr/lib/gpulab pruned where empty; kept with a notice
    where another phase still runs it (code_kept_for)."""
    paths = node.get('paths') or {}
    tree = install_dir + '/' + PACKAGE.split('/', 1)[0]
    if not exists(paths.get(tree)) and not exists(paths.get(install_dir)):
        return
    why = code_kept_for(node, phase) if install_dir == LIB else None
    if why:
        result.warn('%s stays: %s (it goes with the last of the programs that run it)' % (install_dir, why))
        return
    if exists(paths.get(tree)):
        result['remove']['trees'].append(tree)
        result.change('remove %s' % tree, 'the node code of the GPU programs (state absent)')
    result['remove']['prune'] += [install_dir] + (['/usr/lib/gpulab'] if install_dir == LIB else [])


def prune_changes(node, result, reason):
    """Keep in remove.prune the folders the probe saw; a change for each that holds something planned away (the
    others are tidied if empty, with no change claimed)."""
    paths = node.get('paths') or {}
    gone = result['remove']['files'] + result['remove']['trees']
    kept = []
    for folder in result['remove']['prune']:
        info = paths.get(folder)
        if folder in kept or (info is not None and info.get('type') != 'directory'):
            continue
        kept.append(folder)
        if any(path.startswith(folder + '/') for path in gone):
            result.change('remove %s where empty' % folder, reason)
    result['remove']['prune'] = kept
