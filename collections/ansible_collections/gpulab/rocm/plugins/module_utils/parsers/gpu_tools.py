# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Run rocminfo, rocm-smi and amd-smi once each and parse them: the facts of the three facts modules, for the probe.

run(argv) -> (rc, stdout, stderr) and find(tool) -> path or None are the module's; the parsing is the parsers'.
The facts have the shape of gpulab.rocm.rocminfo_facts, rocm_smi_facts and amd_smi_facts (docs/facts.md).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import threading

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import (
    ParseError, ToolHeldOpen, ToolOutputCut, ToolTimeout, combined, missing_tool,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.amd_smi import COMMANDS as AMD_SMI_COMMANDS
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.amd_smi import diagnose, parse_amd_smi
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocm_smi import JSON_ARGS, parse_rocm_smi
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocminfo import parse_rocminfo


def empty_rocminfo():
    return {'present': False, 'source': None, 'rc': None, 'runtime_version': None, 'runtime_ext_version': None,
            'rock_loaded': None, 'rock_version': None, 'wsl': False, 'complete': False, 'system': {},
            'agents': [], 'gpus': [], 'gpu_count': 0, 'cpu_count': 0, 'gfx_targets': [], 'target_ids': [],
            'error': None, 'error_kind': None, 'detail': []}


def empty_rocm_smi():
    return {'present': False, 'source': None, 'rc': None, 'form': None, 'driver_version': None, 'gpus': [],
            'gpu_count': 0, 'error': None, 'error_kind': None, 'detail': [], 'warnings': []}


def empty_amd_smi():
    return {'present': False, 'source': None, 'rc': None, 'forms': [], 'kinds': [], 'amdsmi_version': None,
            'rocm_version': None, 'driver_version': None, 'gpus': [], 'gpu_count': 0, 'error': None,
            'error_kind': None, 'detail': []}


def read_rocminfo(run, find, executable=None):
    """rocminfo facts; raises ParseError when its output is in no known form."""
    facts = empty_rocminfo()
    tool = executable or 'rocminfo'
    binary = find(tool)
    if not binary:
        facts.update(error=missing_tool(tool, 'rocminfo'), error_kind='tool_missing')
        return facts
    rc, stdout, stderr = run([binary])
    # rocminfo prints its listing on stdout; its error messages go to either stream.
    facts.update(parse_rocminfo(stdout if rc == 0 else combined(stdout, stderr)))
    facts.update(source=binary, rc=rc, present=True)
    return facts


def read_rocm_smi(run, find, executable=None):
    """rocm-smi facts (JSON, or the plain table of versions without --json); raises ParseError."""
    facts = empty_rocm_smi()
    tool = executable or 'rocm-smi'
    binary = find(tool)
    if not binary:
        # Optional: the ROCm Core SDK is dropping it (TheRock#6852); nothing of the collection needs it.
        facts.update(error=missing_tool(tool), error_kind='tool_missing')
        return facts
    # rocm-smi prints its JSON on stdout and "Driver not initialized" on stderr, with exit status 0.
    rc, stdout, stderr = run([binary] + JSON_ARGS)
    try:
        parsed = parse_rocm_smi(combined(stdout, stderr))
    except ParseError as first:
        rc, stdout, stderr = run([binary])
        try:
            parsed = parse_rocm_smi(combined(stdout, stderr))
        except ParseError as exc:
            raise ParseError('%s (with --json: %s)' % (exc, first))
    facts.update(parsed)
    facts.update(source=binary, rc=rc, present=True)
    return facts


def read_amd_smi(run, find, executable=None, metric=True, warn=None, firmware=True):
    """amd-smi facts from its static, metric, list and firmware calls; an unreadable call is skipped with a
    warning."""
    facts = empty_amd_smi()
    tool = executable or 'amd-smi'
    binary = find(tool)
    if not binary:
        facts.update(error=missing_tool(tool, 'amd-smi'), error_kind='tool_missing')
        return facts
    texts, rc = [], None
    for args in AMD_SMI_COMMANDS:
        if (args[0] == 'metric' and not metric) or (args[0] == 'firmware' and not firmware):
            continue
        code, stdout, stderr = run([binary] + args)
        rc = code if rc is None else rc
        texts.append(combined(stdout, stderr))
        if code != 0 and diagnose(texts[-1]):
            break  # no GPU: the other calls would only print the same error
    readable, problems = [], []
    for text in texts:
        try:
            parse_amd_smi(text)
            readable.append(text)
        except ParseError as exc:
            problems.append(str(exc))
    if not readable:
        raise ParseError(problems[0])
    for problem in problems:
        if warn:
            warn('Ignored one amd-smi output: %s' % problem)
    facts.update(parse_amd_smi(*readable))
    facts.update(source=binary, rc=rc, present=True)
    return facts


def read_all(run, find, amd_smi_metric=True, warn=None):
    """The three tools' facts, read side by side (on a GPU node each takes a second or more).

    A tool whose output no parser reads gets error_kind 'unreadable' and the reason (never a crash), and so does one
    that printed more than run reads (ToolOutputCut: stopped, its output cut); one that run stopped at its time
    limit (ToolTimeout: a wedged GPU) gets error_kind 'timeout', and so does one that exited while a process it
    started held its output open (ToolHeldOpen: killed, the output perhaps incomplete).
    """
    readers = (('rocminfo', read_rocminfo, {}, empty_rocminfo), ('rocm_smi', read_rocm_smi, {}, empty_rocm_smi),
               ('amd_smi', read_amd_smi, {'metric': amd_smi_metric, 'warn': warn}, empty_amd_smi))
    result = {}

    def one(key, reader, kwargs, empty):
        try:
            result[key] = reader(run, find, **kwargs)
        except ParseError as exc:
            facts = empty()
            facts.update(present=True, error='%s output is in no form the parser knows: %s'
                         % (key.replace('_', '-'), exc), error_kind='unreadable')
            result[key] = facts
        except ToolOutputCut as exc:
            facts = empty()
            facts.update(present=True, error='%s: its output was not read; run it by hand to see what it prints'
                         % exc, error_kind='unreadable')
            result[key] = facts
        except ToolHeldOpen as exc:
            facts = empty()
            facts.update(present=True, error='%s; run it by hand to see what it starts' % exc, error_kind='timeout')
            result[key] = facts
        except ToolTimeout as exc:
            facts = empty()
            facts.update(present=True, error='%s: the GPU or its driver may be wedged (dmesg shows why); reset the '
                         'GPU or reboot the node, then run again' % exc, error_kind='timeout')
            result[key] = facts
        if not result[key].get('source'):
            # Where the tool is, also when its output was not read: what runs it later (amd-smi set) uses this path.
            result[key]['source'] = find(key.replace('_', '-'))

    threads = [threading.Thread(target=one, args=reader) for reader in readers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return result
