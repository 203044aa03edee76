# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fuzz every parser: random text and bytes, and the real captures mutated the ways output gets damaged or forged.

A parser may return facts or raise ParseError with a reason; any other exception is a bug (the user would see
a traceback). Returned facts must be consistent and JSON-serialisable with allow_nan=False, as Ansible sends them
back as JSON, and hold only finite numbers.

The mutations are structure-aware (issue 15): table cells and pipes, brackets and JSON punctuation, digit runs
made hundreds or thousands of digits long, nesting thousands of levels deep (brackets and indentation), fields
over csv's 128 KiB limit, JSON sections of the wrong type, lines dropped, repeated or swapped, outputs cut and
joined. Each example applies one to three of them to a capture.
Examples per test: the hypothesis profile in tests/unit/conftest.py (HYPOTHESIS_PROFILE=gpulab-deep for a long run).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import math
import os
import re

import pytest

hypothesis = pytest.importorskip('hypothesis')

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import firmware, gfx, pci
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import (  # noqa: E402
    MAX_NUMBER, ParseError, find_json_start,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.amd_smi import parse_amd_smi  # noqa: E402
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocm_smi import parse_rocm_smi  # noqa: E402
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocminfo import parse_rocminfo  # noqa: E402
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture, fixture_names  # noqa: E402


def captures(tool):
    return [fixture(os.path.join(tool, name)) for name in fixture_names(tool)]


SEEDS = dict((tool, captures(tool)) for tool in ('rocminfo', 'rocm-smi', 'amd-smi', 'kfd-topology', 'firmware'))

# Digit runs a forged or damaged output may hold: past a float (inf), past 2**64, past Python's 4300-digit limit
# for int(str), and the spellings of non-finite numbers that Python's json reads.
LONG_NUMBERS = ['9' * 400, '1' + '0' * 5000, '9' * 400 + '.5', '-' + '9' * 400, '1e999', '-1e999', 'NaN',
                'Infinity', '-Infinity', '0x' + 'f' * 300, '18446744073709551616', '4294967295']
# Nesting depths: well within and far past Python's recursion limit.
DEPTHS = [3, 40, 1500, 100000]
# Field sizes: a long line, and past csv's 128 KiB field limit.
SIZES = [300, 5000, 140 * 1024]
# What a JSON section (object) may be replaced by.
SECTIONS = ['N/A', 'hot', [1, 2], [{'value': 1, 'unit': 'C'}], 7, None, True, {'value': 3, 'unit': 3},
            {'value': '9' * 400, 'unit': []}, {'value': 1e300, 'unit': 'GB'}, {'value': {'value': 1}, 'unit': 'MB'}]

_DIGITS = re.compile(r'\d+(?:\.\d+)?')
_PUNCT = re.compile(r'[\[\]{}",:|]')
_CELLS = re.compile(r'\|| {2,}|,|\t')


def _pick(items, index):
    return items[index % len(items)] if items else None


def _lines(text):
    return text.splitlines(True) or ['']


def op_cut(text, a, _b, _junk):
    return text[:a % (len(text) + 1)]


def op_drop_line(text, a, _b, _junk):
    lines = _lines(text)
    del lines[a % len(lines)]
    return ''.join(lines)


def op_repeat_line(text, a, b, _junk):
    lines = _lines(text)
    at = a % len(lines)
    lines[at:at] = [lines[at]] * (1 + b % 3)
    return ''.join(lines)


def op_swap_lines(text, a, b, _junk):
    lines = _lines(text)
    i, j = a % len(lines), b % len(lines)
    lines[i], lines[j] = lines[j], lines[i]
    return ''.join(lines)


def op_splice(text, a, _b, junk):
    at = a % (len(text) + 1)
    return text[:at] + junk + text[at + len(junk):]


def op_cell(text, a, b, junk):
    """Drop, repeat, empty or replace one cell of a line split at pipes, commas, tabs or column gaps."""
    lines = _lines(text)
    at = a % len(lines)
    parts = _CELLS.split(lines[at].rstrip('\n'))
    seps = _CELLS.findall(lines[at].rstrip('\n'))
    cell = b % len(parts)
    action = (b // len(parts)) % 4
    if action == 0 and len(parts) > 1:
        del parts[cell]
        del seps[min(cell, len(seps) - 1)]
    elif action == 1:
        parts.insert(cell, parts[cell])
        seps.insert(cell, _pick(seps, cell) or '|')
    else:
        parts[cell] = '' if action == 2 else junk
    joined = parts[0] + ''.join(sep + part for sep, part in zip(seps, parts[1:]))
    lines[at] = joined + ('\n' if lines[at].endswith('\n') else '')
    return ''.join(lines)


def op_punct(text, a, b, _junk):
    """Remove, double or move one pipe, bracket, quote, comma or colon."""
    found = list(_PUNCT.finditer(text))
    if not found:
        return text
    match = found[a % len(found)]
    action = b % 3
    if action == 0:
        return text[:match.start()] + text[match.end():]
    if action == 1:
        return text[:match.start()] + match.group(0) * 2 + text[match.end():]
    at = (b // 3) % (len(text) + 1)
    return text[:at] + match.group(0) + text[at:]


def op_digits(text, a, b, _junk):
    """A digit run becomes hundreds or thousands of digits, 1e999, NaN, ..."""
    found = list(_DIGITS.finditer(text))
    if not found:
        return text
    match = found[a % len(found)]
    return text[:match.start()] + _pick(LONG_NUMBERS, b) + text[match.end():]


def op_nest(text, a, b, _junk):
    """A value nested thousands of levels deep: brackets around a number, or a staircase of indented keys."""
    depth = _pick(DEPTHS, b)
    if b % 2 == 0:
        found = list(_DIGITS.finditer(text))
        match = _pick(found, a)
        if match is None:
            return text
        opener, closer = ('[', ']') if (b // 2) % 2 == 0 else ('{"k": ', '}')
        return text[:match.start()] + opener * depth + match.group(0) + closer * depth + text[match.end():]
    lines = _lines(text)
    at = a % len(lines)
    stair = ''.join(' ' * (level + 1) + 'KEY_{0}:\n'.format(level) for level in range(min(depth, 1500)))
    return ''.join(lines[:at]) + stair + ''.join(lines[at:])


def op_size(text, a, b, _junk):
    """A field (a quoted string, a cell, a value after a colon) becomes a long one."""
    found = list(re.finditer(r'"[^"\n]*"|(?<=: )[^\n,|]+|(?<=,)[^\n,]*', text))
    match = _pick(found, a)
    if match is None:
        return text
    big = 'x' * _pick(SIZES, b)
    if match.group(0).startswith('"') or (b // len(SIZES)) % 2:
        big = '"' + big + '"'
    return text[:match.start()] + big + text[match.end():]


def op_join(text, a, _b, _junk):
    """Two outputs one after the other: the same one twice, or with a cut of itself."""
    return text + ('\n' if a % 2 else '') + text[:(a // 2) % (len(text) + 1)]


def op_json_section(text, a, b, _junk):
    """One object or array of a JSON output becomes another type (a string, a list, a number, a bad unit)."""
    start = find_json_start(text)
    if start < 0:
        return text
    try:
        data = json.loads(text[start:])
    except ValueError:
        return text
    nodes = []
    stack = [data]
    while stack:
        node = stack.pop()
        children = list(node.values()) if isinstance(node, dict) else node if isinstance(node, list) else []
        for index, child in enumerate(children):
            if isinstance(child, (dict, list)):
                nodes.append((node, list(node)[index] if isinstance(node, dict) else index))
                stack.append(child)
    if not nodes:
        return text
    parent, key = nodes[a % len(nodes)]
    parent[key] = _pick(SECTIONS, b)
    return text[:start] + json.dumps(data, indent=2 if '\n  ' in text else None)


OPS = [op_cut, op_drop_line, op_repeat_line, op_swap_lines, op_splice, op_cell, op_punct, op_digits, op_nest,
       op_size, op_join, op_json_section]


def mutate(text, steps):
    for op, a, b, junk in steps:
        text = op(text, a, b, junk)
    return text


def mutated(tool):
    junk = st.text(alphabet=st.characters(blacklist_categories=['Cs']), max_size=20)
    step = st.tuples(st.sampled_from(OPS), st.integers(0, 10 ** 6), st.integers(0, 10 ** 6), junk)
    return st.builds(mutate, st.sampled_from(SEEDS[tool]), st.lists(step, min_size=1, max_size=3))


def inputs(tool):
    return st.one_of(
        st.text(max_size=2000),
        st.binary(max_size=2000).map(lambda data: data.decode('utf-8', 'replace')),
        mutated(tool), mutated(tool), mutated(tool),  # most examples: the captures, mutated
    )


def assert_finite(facts):
    """Every number in the facts is finite and within what the tools print (no 400-digit ints, no inf or nan)."""
    stack = [facts]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
        elif isinstance(node, float):
            assert math.isfinite(node), node
        elif isinstance(node, int) and not isinstance(node, bool):
            assert -MAX_NUMBER < node < MAX_NUMBER, node


def check(parse, *texts):
    try:
        facts = parse(*texts)
    except ParseError as exc:
        assert str(exc)
        return None
    assert facts['gpu_count'] == len(facts['gpus'])
    if facts['gpu_count'] == 0:
        assert facts['error'] and facts['error_kind']
    json.dumps(facts, allow_nan=False)
    assert_finite(facts)
    return facts


@given(inputs('rocminfo'))
def test_fuzz_rocminfo(text):
    facts = check(parse_rocminfo, text)
    if facts and facts['agents']:
        # Agents are numbered 1..N once each: joined outputs (GPUs counted twice) are refused.
        assert [agent['agent'] for agent in facts['agents']] == list(range(1, len(facts['agents']) + 1))


@given(inputs('rocm-smi'))
def test_fuzz_rocm_smi(text):
    check(parse_rocm_smi, text)


@given(inputs('amd-smi'))
def test_fuzz_amd_smi(text):
    facts = check(parse_amd_smi, text)
    for gpu in (facts or {}).get('gpus', []):
        # A partition is a mode name, never the halves of an "N/A" cell.
        assert gpu['partitions'] is None or (gpu['partitions']['compute'], gpu['partitions']['memory']) != ('N', 'A')


@given(st.lists(inputs('amd-smi'), min_size=2, max_size=3))
def test_fuzz_amd_smi_merge(texts):
    check(parse_amd_smi, *texts)


@pytest.mark.parametrize('tool, parse', [('rocminfo', parse_rocminfo), ('rocm-smi', parse_rocm_smi),
                                         ('amd-smi', parse_amd_smi)])
@pytest.mark.parametrize('op', OPS, ids=[op.__name__ for op in OPS])
def test_every_mutation_reaches_every_parser(tool, parse, op):
    """Each mutation at a few fixed places of every capture, so that each one runs whatever hypothesis draws."""
    for seed in SEEDS[tool]:
        for a, b in ((7, 1), (12345, 2), (999, 3)):
            check(parse, mutate(seed, [(op, a, b, '|]x')]))


@given(inputs('firmware'))
def test_fuzz_debugfs_firmware_info(text):
    try:
        parsed = firmware.parse_debugfs(text)
    except ParseError as exc:
        assert str(exc)
        return
    json.dumps(parsed, allow_nan=False)
    assert len(parsed['firmware']) <= firmware.MAX_BLOCKS
    assert all(version.startswith('0x') and len(version) <= 18 for version in parsed['firmware'].values())


@given(st.sampled_from(firmware.SOURCES), st.text(max_size=30),
       st.one_of(st.text(max_size=80), st.integers(), st.none(), st.booleans(), st.floats()))
def test_fuzz_firmware_names_and_versions(source, name, value):
    block = firmware.normalize_id(source, name)
    assert block is None or re.match(r'^[a-z0-9_]{1,48}\Z', block)
    version = firmware.normalize_version(source, block, value)
    assert version is None or (isinstance(version, str) and len(version) <= firmware.MAX_TEXT)


@given(inputs('kfd-topology'))
def test_fuzz_kfd_properties(text):
    props = pci.parse_kfd_properties(text)
    assert all(isinstance(value, int) for value in props.values())
    json.dumps(pci.kfd_node(1, props, mem_banks=[props], io_links=[props]))


@given(st.dictionaries(st.sampled_from(['simd_count', 'simd_per_cu', 'gfx_target_version', 'vendor_id', 'device_id',
                                        'location_id', 'domain', 'local_mem_size', 'hive_id', 'unique_id']),
                       st.integers(-2 ** 64, 2 ** 64)))
def test_fuzz_kfd_node_values(props):
    json.dumps(pci.kfd_node(0, props))


@given(st.text(max_size=80))
def test_fuzz_small_sysfs_parsers(text):
    speed = pci.parse_link_speed(text)
    assert speed is None or speed >= 0
    pci.parse_pp_dpm_pcie(text)
    gfx.normalize_gfx_name(text)
    gfx.hsa_override_for(text)
    gfx.parse_isa_name(text)
