# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The AnsibleModule side of the GPU facts modules (rocminfo_facts, rocm_smi_facts, amd_smi_facts, and clean_facts
for gpu_pci_facts): their options, the src option, the tool runs under their timeout option, and the result.

It lives in host/ (code that runs in the module on the managed host), not beside the parsers in
parsers/_facts_common.py, because it works on the AnsibleModule (params, get_bin_path, warn, exit_json, fail_json):
parsers/ stays pure functions of text, which the node programs (node/) import too.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import _facts_common
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import (
    ParseError, ToolHeldOpen, ToolOutputCut, ToolTimeout, read_src, timed_run, tool_dirs, utf8_notice, valid_utf8,
)


def facts_spec(**extra):
    """The argument_spec of a tool's facts module (doc fragment gpulab.rocm.gpu_facts.tool), plus its own options."""
    spec = dict(
        src=dict(type='path'),
        executable=dict(type='str', aliases=['path']),
        fail_on_no_gpu=dict(type='bool', default=False),
        timeout=dict(type='int', default=60),
    )
    spec.update(extra)
    return spec


def facts_main(module, tool, empty, parse, read, *read_args):
    """Exit the module with the tool's facts under ansible_facts[tool, '-' as '_'], never changed.

    empty() gives the facts with no tool; parse(text) reads a saved output (the src option); read(run, find,
    executable, *read_args) runs the tool: the probe's own reader (parsers/gpu_tools.py), one implementation for the
    module and gpulab.rocm.node_probe. A ParseError or a tool stopped by its timeout fails the module."""
    key = tool.replace('-', '_')
    notices = []
    try:
        if module.params['src']:
            facts = facts_from_src(module, tool, empty, parse)
        else:
            facts = read(tool_run(module, notices), lambda name: module.get_bin_path(name, opt_dirs=tool_dirs()),
                         module.params['executable'], *read_args)
    except ParseError as exc:
        module.fail_json(msg='Cannot read the {0} output: {1}'.format(tool, exc))
    except ToolTimeout as exc:
        module.fail_json(msg=timeout_message(exc))
    facts = clean_facts(module, key, facts, notices)
    if facts['present'] and facts['gpu_count'] == 0 and module.params['fail_on_no_gpu']:
        module.fail_json(msg=facts['error'], ansible_facts={key: facts})
    module.exit_json(changed=False, ansible_facts={key: facts})


def facts_from_src(module, tool, empty, parse):
    """The facts of a saved output of `tool` (the facts modules' src option): empty() updated by parse(text), with
    source and present set. Fails the module, naming the file, when it cannot be read or is not that tool's output."""
    path = module.params['src']
    try:
        text = read_src(path)
    except (IOError, OSError) as exc:
        module.fail_json(msg='Cannot read src {0}: {1}'.format(path, exc))
    facts = empty()
    try:
        facts.update(parse(text))
    except ParseError as exc:
        module.fail_json(msg='Cannot read the {0} output in {1}: {2}'.format(tool, path, exc))
    facts.update(source=path, present=True)
    return facts


def tool_run(module, notices):
    """The facts modules' run: process_run under their timeout option (timed_run). process_run is looked up in
    _facts_common when called, where the unit tests replace it."""
    return timed_run(_facts_common.process_run, module.get_bin_path('timeout'), module.params['timeout'], notices)


def timeout_message(exc):
    """The tool's stop in one message: a timeout may be a wedged GPU; output cut or held open is the tool's own."""
    if isinstance(exc, (ToolOutputCut, ToolHeldOpen)):
        return '{0}: the tool is not behaving; run it by hand to see its output.'.format(exc)
    return '{0}: the GPU or its driver may be wedged (dmesg shows why); reset the GPU or reboot the node.'.format(exc)


def clean_facts(module, key, facts, notices):
    """facts with every string valid UTF-8; each notice (and what was replaced) becomes a warning."""
    places = []
    facts = valid_utf8(facts, key, places)
    for text in notices + ([utf8_notice(places)] if places else []):
        module.warn(text)
    return facts
