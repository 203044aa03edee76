# -*- coding: utf-8 -*-
"""role_spec: a role's variables against its argument_specs, as the plan action checks them in the plan pass."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.planning import role_spec

# The shapes the roles' meta/argument_specs.yml use (rocm_env's and rocm_repo's options, abridged).
OPTIONS = {
    'rocm_env_bashrc_enabled': {'type': 'bool', 'default': True, 'description': 'x'},
    'rocm_env_extra_vars': {'type': 'dict', 'default': {}, 'description': 'x'},
    'rocm_repo_state': {'type': 'str', 'choices': ['present', 'absent'], 'default': 'present', 'description': 'x'},
    'rocm_access_groups': {'type': 'list', 'elements': 'str', 'default': ['video', 'render'], 'description': 'x'},
}
GOOD = {'rocm_env_bashrc_enabled': True, 'rocm_env_extra_vars': {}, 'rocm_repo_state': 'present',
        'rocm_access_groups': ['video', 'render']}


def test_values_that_match_have_no_error():
    assert role_spec.errors(OPTIONS, GOOD) == []


def test_a_string_is_refused_where_ansible_would_convert_it():
    # The roles read the value itself (`when: rocm_metrics_enabled`), so 'yes' is not converted to True but refused.
    assert role_spec.errors(OPTIONS, dict(GOOD, rocm_env_bashrc_enabled='yes')) == [
        "rocm_env_bashrc_enabled must be a boolean (true or false), got the string 'yes' (-e name=value "
        "gives a string: pass it as YAML or JSON, for example -e '{\"rocm_env_bashrc_enabled\": ...}')"]
    assert role_spec.errors(OPTIONS, dict(GOOD, rocm_access_groups='video,render')) == [
        "rocm_access_groups must be a list, got the string 'video,render' (-e name=value gives a string: pass it "
        "as YAML or JSON, for example -e '{\"rocm_access_groups\": ...}')"]


def test_every_mismatch_is_named_at_once():
    messages = role_spec.errors(OPTIONS, dict(GOOD, rocm_env_bashrc_enabled='maybe', rocm_repo_state='gone',
                                              rocm_env_extra_vars=['A=1']))
    text = ' '.join(messages)
    assert len(messages) == 3, messages
    assert "rocm_env_bashrc_enabled must be a boolean (true or false), got the string 'maybe'" in text
    # Choices are Ansible's validator's, on the values whose types passed.
    assert 'rocm_repo_state' in text and 'present, absent' in text and 'gone' in text
    assert 'rocm_env_extra_vars must be a mapping (dict), got a list' in text


def test_the_values_are_not_changed():
    values = dict(GOOD, rocm_env_bashrc_enabled='yes')
    role_spec.errors(OPTIONS, values)
    assert values['rocm_env_bashrc_enabled'] == 'yes'


def test_the_refusal_names_the_role_every_message_and_the_fix():
    message = role_spec.refusal('rocm_env', ['first problem', 'second problem'])
    assert message.startswith("rocm_env: variables that do not match the role's meta/argument_specs.yml: ")
    assert 'first problem; second problem' in message
    assert 'docs/roles.md' in message and 'meta/input_constraints.yml' in message
