# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A role's variables checked against its declared schema inside the phase's plan (docs/plan-contract.md): a wrong
type, range or form is one more refusal of the phase, so the gate lists it with every other phase's problems, before
any change, and the pass needs no validation task per role.

The schema of a role is its meta/argument_specs.yml `main` options (type, elements, choices) and, beside it,
meta/input_constraints.yml (CONSTRAINTS_FILE): what Ansible's argument spec cannot say, per option - a range, a form,
the keys and values of a dict. (ansible-lint's schema of argument_specs.yml refuses any key Ansible does not know, so
these cannot go into the options themselves.)

The types are strict: the value itself must be of the option's type, as the role's phase's planner reads it (a node
class's gpu_count). Ansible's validator would convert the string '8' to 8 in a copy the role never sees, so such a
string is refused here, not converted. A boolean's one exception is 'true' and 'false' exactly, what an AWX survey's
choice sends: every role reads its booleans through `| bool` (tests/test_role_inputs.py holds them to it).
Ansible's validator then checks what it knows (choices, elements' choices, required) on the values whose types
passed. Every string, at any depth (keys of dicts too), must be one line. Nothing here changes the values."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.six import binary_type, integer_types, string_types

# Beside meta/argument_specs.yml in each role; its key `constraints` maps option names to constraint specs.
CONSTRAINTS_FILE = 'input_constraints.yml'

# The keys a constraint spec may hold (documented in docs/plan-contract.md, "What the gate checks").
CONSTRAINT_KEYS = ('type', 'elements', 'choices', 'minimum', 'maximum', 'exclusive_minimum', 'pattern', 'form',
                   'keys', 'values', 'options', 'multiline')

_WANTED = {
    'bool': 'a boolean (true or false)',
    'int': 'a whole number (unquoted)',
    'float': 'a number (unquoted)',
    'str': 'a string',
    'path': 'a path (a string)',
    'list': 'a list',
    'dict': 'a mapping (dict)',
}


SURVEY_BOOLEANS = ('true', 'false')


def _is_type(value, kind):
    if kind == 'bool':
        # 'true' and 'false' exactly: what an AWX survey's choice sends (it has no boolean type); every role reads a
        # boolean through `| bool`, which reads these two as Ansible does. No other spelling ('yes', 'False', '1').
        return isinstance(value, bool) or value in SURVEY_BOOLEANS
    if kind == 'int':
        return isinstance(value, integer_types) and not isinstance(value, bool)
    if kind == 'float':
        return isinstance(value, integer_types + (float,)) and not isinstance(value, bool)
    if kind in ('str', 'path'):
        return isinstance(value, string_types)
    if kind == 'list':
        return isinstance(value, (list, tuple))
    if kind == 'dict':
        return isinstance(value, dict)
    return True  # raw, or a type this project does not use: Ansible's validator checks it


def _described(value):
    if isinstance(value, bool):
        return 'the boolean %s' % value
    if isinstance(value, string_types + (binary_type,)):
        return 'the string %r' % (value,)
    if isinstance(value, (list, tuple)):
        return 'a list'
    if isinstance(value, dict):
        return 'a mapping'
    if value is None:
        return 'nothing (null)'
    return '%r' % (value,)


def _type_message(name, value, kind, top, form=None):
    message = '%s must be %s, got %s' % (name, form or _WANTED.get(kind, kind), _described(value))
    if top and isinstance(value, string_types) and kind not in ('str', 'path'):
        # -e name=value makes every value a string; JSON keeps its type.
        message += (" (-e name=value gives a string: pass it as YAML or JSON, for example -e '{\"%s\": ...}')"
                    % name)
    return message


def _range(name, value, spec):
    problems = []
    if 'minimum' in spec and value < spec['minimum']:
        problems.append('%s must be at least %s, got %r' % (name, spec['minimum'], value))
    if 'exclusive_minimum' in spec and value <= spec['exclusive_minimum']:
        problems.append('%s must be more than %s, got %r' % (name, spec['exclusive_minimum'], value))
    if 'maximum' in spec and value > spec['maximum']:
        problems.append('%s must be at most %s, got %r' % (name, spec['maximum'], value))
    return problems


def _one_line(name, value, spec):
    if spec.get('multiline') or not isinstance(value, string_types):
        return []
    if '\n' in value or '\r' in value:
        return ['%s holds a line break (%r); it must be one line (a trailing newline too: check the quoting '
                'or the | of a YAML block)' % (name, value)]
    return []


def _lines_anywhere(name, value):
    """A line break in any string inside value (a key or a value at any depth), for the parts no spec describes."""
    if isinstance(value, string_types):
        return _one_line(name, value, {})
    if isinstance(value, dict):
        problems = []
        for key in sorted(value, key=str):
            problems += _one_line('%s key %r' % (name, key), key, {}) if isinstance(key, string_types) else []
            problems += _lines_anywhere('%s[%r]' % (name, key), value[key])
        return problems
    if isinstance(value, (list, tuple)):
        problems = []
        for index, item in enumerate(value):
            problems += _lines_anywhere('%s[%d]' % (name, index), item)
        return problems
    return []


def check(name, value, spec, top=True):
    """The problems of one value against its spec (an argument_specs option merged with its constraints): each names
    the variable, or the part of it (rocm_health_node_classes['mi300'].gpu_count), and what it must be."""
    kind = spec.get('type', 'str' if top else 'raw')
    if not _is_type(value, kind):
        return [_type_message(name, value, kind, top, spec.get('form') if kind in ('str', 'path') else None)]
    problems = []
    if kind in ('int', 'float'):
        problems += _range(name, value, spec)
    if kind in ('str', 'path'):
        problems += _one_line(name, value, spec)
        if not problems and spec.get('pattern') and not re.match('(?:%s)\\Z' % spec['pattern'], value):
            problems.append('%s must be %s, got %r' % (name, spec.get('form') or 'of the form %s' % spec['pattern'],
                                                       value))
    if not problems and not top and spec.get('choices') is not None and value not in spec['choices']:
        problems.append('%s must be one of %s, got %r' % (name, ', '.join(str(item) for item in spec['choices']),
                                                          value))
    if kind == 'list':
        # The list's range and form constrain each element.
        element = dict((key, item) for key, item in spec.items()
                       if key in ('pattern', 'form', 'minimum', 'maximum', 'exclusive_minimum', 'multiline'))
        element['type'] = spec.get('elements', 'raw')
        for index, item in enumerate(value):
            problems += check('%s[%d]' % (name, index), item, element, top=False)
    elif kind == 'dict':
        problems += _dict(name, value, spec)
    elif kind == 'raw':
        problems += _lines_anywhere(name, value)
    return problems


def _dict(name, value, spec):
    problems = []
    options = spec.get('options')
    if options is not None:
        unknown = sorted(str(key) for key in value if key not in options)
        if unknown:
            problems.append('%s has keys it cannot set: %s (it can set: %s)'
                            % (name, ', '.join(unknown), ', '.join(sorted(options))))
    for key in sorted(value, key=str):
        label = '%s[%r]' % (name, key)
        if isinstance(key, string_types):
            problems += _one_line('%s key %r' % (name, key), key, {})
        if spec.get('keys'):
            problems += check('%s key %r' % (name, key), key, spec['keys'], top=False)
        if options is not None:
            if key in options:
                problems += check('%s.%s' % (name, key), value[key], options[key], top=False)
        elif spec.get('values'):
            problems += check(label, value[key], spec['values'], top=False)
        else:
            problems += _lines_anywhere(label, value[key])
    return problems


def merged(options, constraints=None):
    """Each option's argument_specs entry with its constraints (meta/input_constraints.yml) over it."""
    constraints = constraints or {}
    return dict((name, dict(spec, **(constraints.get(name) or {}))) for name, spec in options.items())


def errors(options, values, constraints=None):
    """The problems of the variables in values against a role entry point's `options` (its argument_specs.yml) and
    their constraints (the `constraints` of its input_constraints.yml): strict type, range, one line, form, keys
    and values of a dict; then Ansible's validator on the variables whose types passed (choices, elements,
    required). Every message names its variable; none is converted or changed."""
    specs = merged(options, constraints)
    problems, refused = [], set()
    for name in sorted(values):
        if name not in specs:
            continue
        found = check(name, values[name], specs[name])
        if found:
            refused.add(name)
            problems += found
    rest = dict((name, spec) for name, spec in options.items() if name not in refused)
    checked = dict((name, value) for name, value in values.items() if name not in refused)
    problems += list(ArgumentSpecValidator(rest).validate(checked, validate_role_argument_spec=True).error_messages)
    return problems


def constraint_problems(options, constraints):
    """What is wrong with a role's input_constraints.yml itself: a constraint for an option argument_specs.yml does
    not declare, or a key this module does not read (a typo would silently check nothing)."""
    problems = []
    for name, spec in sorted((constraints or {}).items()):
        if name not in options:
            problems.append('%s: no such option in argument_specs.yml' % name)
            continue
        problems += _spec_problems(name, spec)
    return problems


def _spec_problems(name, spec):
    if not isinstance(spec, dict):
        return ['%s: a constraint must be a mapping' % name]
    problems = ['%s: unknown constraint key %s' % (name, key) for key in sorted(spec) if key not in CONSTRAINT_KEYS]
    if spec.get('pattern'):
        try:
            re.compile(spec['pattern'])
        except re.error as exc:
            problems.append('%s: pattern %r does not compile: %s' % (name, spec['pattern'], exc))
    for part in ('keys', 'values'):
        if part in spec:
            problems += _spec_problems('%s.%s' % (name, part), spec[part])
    for key, sub in sorted((spec.get('options') or {}).items()):
        problems += _spec_problems('%s.%s' % (name, key), sub)
    return problems


def describe(spec):
    """What a constraint spec checks, in words for docs/roles.md ('' where it declares nothing beyond the type)."""
    parts = []
    for key, words in (('minimum', 'at least %s'), ('exclusive_minimum', 'more than %s'), ('maximum', 'at most %s')):
        if key in spec:
            parts.append(words % spec[key])
    if spec.get('pattern'):
        parts.append(spec.get('form') or 'of the form %s' % spec['pattern'])
    if spec.get('choices') is not None:
        parts.append('one of %s' % ', '.join(str(item) for item in spec['choices']))
    if spec.get('keys'):
        parts.append('each key %s' % _typed(spec['keys']))
    if spec.get('options') is not None:
        parts.append('keys: %s' % ', '.join('%s (%s)' % (key, _typed(sub)) for key, sub in sorted(spec['options'].items())))
    if spec.get('values'):
        parts.append('each value %s' % _typed(spec['values']))
    return '; '.join(parts)


def _typed(spec):
    words = describe(spec)
    kind = _WANTED.get(spec.get('type'), 'any value')
    return '%s, %s' % (kind, words) if words else kind


def refusal(role, messages):
    """The phase's refusal for a role whose variables do not match its declared schema."""
    return ('%s: variables that do not match the role\'s meta/argument_specs.yml: %s. Set them to the type and '
            'values that file and meta/%s document (docs/roles.md); nothing was converted.'
            % (role, '; '.join(messages), CONSTRAINTS_FILE))
