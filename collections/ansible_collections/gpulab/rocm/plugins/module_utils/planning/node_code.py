# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's code that runs on the nodes as root outside Ansible, and how it gets there: one list, one folder.

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
    'parsers/_facts_common', 'parsers/amd_smi', 'parsers/gfx', 'parsers/gpu_sysfs', 'parsers/gpu_tools', 'parsers/pci',
    'parsers/rocm_smi', 'parsers/rocminfo', 'parsers/slurm_conf',
    'host/root_files',
)
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
