# -*- coding: utf-8 -*-
"""The plan action's own helpers (the decisions are module_utils', tested beside them)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.action.plan import main_options


def test_the_main_entry_point_s_options_are_read_from_the_file(tmp_path):
    path = tmp_path / 'argument_specs.yml'
    path.write_text('---\nargument_specs:\n  main:\n    short_description: x\n    options:\n'
                    '      rocm_repo_state:\n        type: str\n        choices: [present, absent]\n'
                    '        default: present\n        description: x\n'
                    '  plan:\n    options:\n      other: {type: int}\n')
    assert main_options(str(path)) == {'rocm_repo_state': {
        'type': 'str', 'choices': ['present', 'absent'], 'default': 'present', 'description': 'x'}}
    path.write_text('---\nargument_specs:\n  plan: {}\n')
    assert main_options(str(path)) == {}
