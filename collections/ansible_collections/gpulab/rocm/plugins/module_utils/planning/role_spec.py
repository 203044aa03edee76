# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's variables checked against its meta/argument_specs.yml inside the phase's plan (docs/plan-contract.md):
a wrong type or choice is one more refusal of the phase, so the gate lists it with every other phase's problems,
before any change, and the pass needs no validation task per role. Ansible's own validator does the checking
(the one ansible.builtin.validate_argument_spec runs); this module only names the role and the fix."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator


def errors(options, values):
    """The validator's message for each variable in values that its entry in options (a role entry point's
    `options`) refuses: type, choices, elements, required."""
    return list(ArgumentSpecValidator(options).validate(values, validate_role_argument_spec=True).error_messages)


def refusal(role, messages):
    """The phase's refusal for a role whose variables do not match its argument_specs."""
    return ('%s: variables that do not match the role\'s meta/argument_specs.yml: %s. Set them to the type and '
            'values that file documents (docs/roles.md).' % (role, '; '.join(messages)))
