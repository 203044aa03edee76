# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's variables checked against its meta/argument_specs.yml inside the phase's plan (docs/plan-contract.md):
a wrong type or choice is one more refusal of the phase, so the gate lists it with every other phase's problems,
before any change, and the pass needs no validation task per role. Ansible's own validator does the checking
(the one ansible.builtin.validate_argument_spec runs); this module only names the role and the fix."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import yaml

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

# libyaml's loader where PyYAML was built with it. Each plan call runs in a task worker of its own, where Ansible's
# loader would parse the file again with origin tags and return a deep copy: about 15 ms a call, 12 calls a run.
_LOADER = getattr(yaml, 'CSafeLoader', yaml.SafeLoader)


def main_options(path):
    """The `main` entry point's options of a role's meta/argument_specs.yml (plain YAML, never vaulted); {} where
    the file has none."""
    with open(path, 'rb') as handle:
        specs = yaml.load(handle, Loader=_LOADER) or {}
    return ((specs.get('argument_specs') or {}).get('main') or {}).get('options') or {}


def errors(options, values):
    """The validator's message for each variable in values that its entry in options (a role entry point's
    `options`) refuses: type, choices, elements, required."""
    return list(ArgumentSpecValidator(options).validate(values, validate_role_argument_spec=True).error_messages)


def refusal(role, messages):
    """The phase's refusal for a role whose variables do not match its argument_specs."""
    return ('%s: variables that do not match the role\'s meta/argument_specs.yml: %s. Set them to the type and '
            'values that file documents (docs/roles.md).' % (role, '; '.join(messages)))
