# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""module_utils by runtime: each subpackage imports only the ones below it, and the import graph has no cycle."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import os

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import planner

PREFIX = 'ansible_collections.gpulab.rocm.plugins.module_utils.'
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(planner.__file__)))
# What each runtime may import: the parsers and apt stand alone; what runs on the host through Ansible may use the
# parsers; the programs on the nodes the parsers and the host helpers; the controller's planning anything.
ALLOWED = {
    'parsers': {'parsers'},
    'apt': {'apt'},
    'host': {'host', 'parsers'},
    'node': {'node', 'parsers', 'host'},
    'planning': {'planning', 'parsers', 'apt', 'host', 'node'},
}


def import_graph():
    """{'package/module': {'package/module', ...}} of module_utils' imports of each other."""
    graph = {}
    for package in sorted(ALLOWED):
        for name in sorted(os.listdir(os.path.join(ROOT, package))):
            if not name.endswith('.py'):
                continue
            with open(os.path.join(ROOT, package, name)) as handle:
                tree = ast.parse(handle.read())
            found = set()
            for node in ast.walk(tree):
                if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith(PREFIX):
                    rest = node.module[len(PREFIX):]
                    if '.' in rest:
                        found.add(rest.replace('.', '/'))
                    else:
                        found.update('%s/%s' % (rest, alias.name) for alias in node.names)
            graph['%s/%s' % (package, name[:-3])] = found
    return graph


def test_every_module_is_in_a_runtime_package():
    assert sorted(name for name in os.listdir(ROOT) if name.endswith('.py')) == []
    assert sorted(name for name in os.listdir(ROOT) if not name.startswith(('_', '.'))) == sorted(ALLOWED)


def test_each_runtime_imports_only_what_it_may():
    wrong = sorted('%s imports %s' % (module, dep) for module, deps in import_graph().items() for dep in deps
                   if dep.split('/')[0] not in ALLOWED[module.split('/')[0]])
    assert wrong == []


def test_the_import_graph_has_no_cycle():
    graph = import_graph()
    done, cycles = set(), []

    def visit(module, path):
        for dep in sorted(graph.get(module, ())):
            if dep in path:
                cycles.append(path[path.index(dep):] + [dep])
            elif dep not in done:
                visit(dep, path + [dep])
        done.add(module)

    for module in sorted(graph):
        if module not in done:
            visit(module, [module])
    assert cycles == []
