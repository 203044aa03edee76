# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test helpers for the modules: the GPU tools' captured outputs, and running a module's main() in-process."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import contextlib
import json
import os
import shutil
import subprocess
import sys

from unittest import mock

from ansible.module_utils import basic

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import _facts_common

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), 'plugins', 'module_utils', 'fixtures')


def fixture_path(name):
    return os.path.join(FIXTURES, name)


def fixture(name):
    """A captured output as text (the tools print UTF-8: rocm-smi's degree sign)."""
    with open(fixture_path(name), 'rb') as handle:
        return handle.read().decode('utf-8')


def fixture_names(tool):
    return sorted(os.listdir(os.path.join(FIXTURES, tool)))


class ModuleExit(Exception):
    """exit_json or fail_json was called; .result holds what the module returned."""

    def __init__(self, result):
        super(ModuleExit, self).__init__(result.get('msg', ''))
        self.result = result


@contextlib.contextmanager
def module_args(args):
    """Hand args to AnsibleModule; ansible-core 2.19 also needs the serialization profile set."""
    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:  # ansible-core < 2.19
        with mock.patch.object(basic, '_ANSIBLE_ARGS', json.dumps({'ANSIBLE_MODULE_ARGS': args}).encode()):
            yield
        return
    with patch_module_args(args):
        yield


@contextlib.contextmanager
def captured_exit():
    """exit_json and fail_json raise ModuleExit with the result, plus `failed` and the module's `warnings`."""
    warnings = []

    def exit_json(self, **result):
        result.update(failed=False, warnings=warnings)
        raise ModuleExit(result)

    def fail_json(self, msg, **result):
        result.update(msg=msg, failed=True, warnings=warnings)
        raise ModuleExit(result)

    with mock.patch.object(basic.AnsibleModule, 'exit_json', exit_json), \
            mock.patch.object(basic.AnsibleModule, 'fail_json', fail_json), \
            mock.patch.object(basic.AnsibleModule, 'warn', lambda self, warning: warnings.append(warning)):
        yield


def run_module(main, args, run_command=None, bin_path='/opt/rocm/bin/tool'):
    """Run a module's main() with its command runners (_facts_common.process_run, what tool_run runs, and
    run_command) and get_bin_path patched; returns (result, one mock of both: call_args[0][0] is the argv).

    The result holds what exit_json or fail_json got, plus `failed` and the module's `warnings`.

    run_command: a list of (rc, stdout, stderr) answered in order, or a callable(args) -> (rc, stdout, stderr).
    bin_path: what get_bin_path returns (None: the tool is missing; None for timeout), or a callable(name) -> path
      or None.
    """
    calls = list(run_command) if isinstance(run_command, (list, tuple)) else None

    def fake_run(argv, *unused_args, **unused_kwargs):
        if callable(run_command):
            return run_command(argv)
        if not calls:
            raise AssertionError('unexpected run_command({0!r})'.format(argv))
        return calls.pop(0)

    def fake_find(unused_self, name, *unused, **unused_kwargs):
        # coreutils' timeout, which the modules run their tools under, only where the test's callable names it.
        if callable(bin_path):
            return bin_path(name)
        return None if name == 'timeout' else bin_path

    run, find = fake_run, fake_find
    with module_args(args), captured_exit(), \
            mock.patch.object(_facts_common, 'process_run', side_effect=run) as runner, \
            mock.patch.object(basic.AnsibleModule, 'run_command', lambda self, argv, *a, **k: runner(argv)), \
            mock.patch.object(basic.AnsibleModule, 'get_bin_path', autospec=True, side_effect=find):
        try:
            main()
        except ModuleExit as done:
            return done.result, runner
    raise AssertionError('the module returned without exit_json or fail_json')


def run_main(main, args, check_mode=False, diff=False):
    """Run a module's main() in-process with nothing patched but its exit: what Ansible runs over AnsiballZ, without
    an ansible process per call. Returns the result as exit_json or fail_json got it, with `failed` and the
    module's `warnings`. (Each module keeps one test through `ansible -m`, the interface as Ansible calls it.)"""
    with module_args(dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)), captured_exit():
        try:
            main()
        except ModuleExit as done:
            return done.result
    raise AssertionError('the module returned without exit_json or fail_json')


# The ansible next to this Python (the project's .venv) when it is not on PATH, so `make test` runs the tests that
# call it; the collection's root for ANSIBLE_COLLECTIONS_PATH.
ANSIBLE = shutil.which('ansible') or shutil.which('ansible', path=os.path.dirname(sys.executable))
COLLECTIONS = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), *['..'] * 5))


def run_through_ansible(module, args):
    """A module through ansible itself on localhost (AnsiballZ, --check --diff): the interface as Ansible calls it.
    Returns the task's result for localhost."""
    cmd = [ANSIBLE, 'localhost', '-c', 'local', '-m', module, '-a', json.dumps(args), '--check', '--diff']
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_LOAD_CALLBACK_PLUGINS='1',
               ANSIBLE_STDOUT_CALLBACK='ansible.posix.json', ANSIBLE_LOCALHOST_WARNING='0')
    out = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=180, check=False).stdout
    return json.loads(out)['plays'][0]['tasks'][0]['hosts']['localhost']
