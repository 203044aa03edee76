# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The node code's one list: closed under its imports, nothing more, and shipped the same way by both roles."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import node_code, plan_health, plan_metrics

PREFIX = 'ansible_collections.gpulab.rocm.plugins.module_utils.'
HERE = os.path.dirname(os.path.dirname(os.path.abspath(node_code.__file__)))


def imports_of(name):
    """The module_utils modules one shipped module imports, as 'package/module'."""
    with open(os.path.join(HERE, name + '.py')) as handle:
        tree = ast.parse(handle.read())
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith('ansible'):
            assert node.module.startswith(PREFIX), (name, node.module)
            package = node.module[len(PREFIX):].replace('.', '/')
            if '/' in package:
                found.add(package)
            else:
                found.update('%s/%s' % (package, alias.name) for alias in node.names)
        if isinstance(node, ast.Import):
            assert not [alias.name for alias in node.names if alias.name.startswith('ansible')], name
    return found


def test_the_list_is_the_programs_and_exactly_what_they_import():
    programs = sorted('node/' + name[:-3] for name in os.listdir(os.path.join(HERE, 'node')) if name.endswith('.py'))
    reached, todo = set(), list(programs)
    while todo:
        name = todo.pop()
        if name not in reached:
            reached.add(name)
            todo.extend(imports_of(name))
    assert sorted(reached) == sorted(node_code.SHIPPED)


def test_no_shipped_module_is_planning_code():
    assert not [name for name in node_code.SHIPPED if name.startswith(('planning/', 'apt/'))]


def test_both_roles_ship_the_same_files_to_the_same_folder():
    health = plan_health.library_files()
    assert health == node_code.library_files(node_code.LIB)
    assert set(node_code.folders()) <= set(plan_health.folders())
    assert '%s/%s/node/health_run.py' % (node_code.LIB, node_code.PACKAGE) in health
    assert '%s/%s/parsers/__init__.py' % (node_code.LIB, node_code.PACKAGE) in health


def test_the_entry_scripts_run_python_isolated_and_import_from_node():
    for script in (plan_health.ENTRY, plan_health.SLURM_ENTRY, plan_health.PROLOG_ENTRY,
                   plan_metrics.cli_script(node_code.LIB)):
        assert script.startswith('#!/usr/bin/python3 -I\n')
        assert 'from ansible_collections.gpulab.rocm.plugins.module_utils.node import ' in script
        compile(script, 'entry', 'exec')
