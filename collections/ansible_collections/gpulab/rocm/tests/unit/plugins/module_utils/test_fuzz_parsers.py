# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Fuzz every parser: random text, and the real captures cut, thinned and spliced with junk.

A parser may return facts or raise ParseError with a reason; any other exception is a bug (the user would see
a traceback). Returned facts must be consistent and JSON-serialisable, as Ansible sends them back as JSON.
Examples per test: the hypothesis profile in tests/unit/conftest.py (HYPOTHESIS_PROFILE=gpulab-deep for a long run).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

hypothesis = pytest.importorskip('hypothesis')

from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from ansible_collections.gpulab.rocm.plugins.module_utils import gfx, pci  # noqa: E402
from ansible_collections.gpulab.rocm.plugins.module_utils._facts_common import ParseError  # noqa: E402
from ansible_collections.gpulab.rocm.plugins.module_utils.amd_smi import parse_amd_smi  # noqa: E402
from ansible_collections.gpulab.rocm.plugins.module_utils.rocm_smi import parse_rocm_smi  # noqa: E402
from ansible_collections.gpulab.rocm.plugins.module_utils.rocminfo import parse_rocminfo  # noqa: E402
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture, fixture_names  # noqa: E402


def captures(tool):
    return [fixture(os.path.join(tool, name)) for name in fixture_names(tool)]


def cut(text, fraction):
    return text[:int(len(text) * fraction)]


def drop_lines(text, indexes):
    lines = text.splitlines(True)
    dropped = set(index % max(len(lines), 1) for index in indexes)
    return ''.join(line for number, line in enumerate(lines) if number not in dropped)


def splice(text, fraction, junk):
    at = int(len(text) * fraction)
    return text[:at] + junk + text[at + len(junk):]


def inputs(tool):
    texts = captures(tool)
    return st.one_of(
        st.text(max_size=2000),
        st.builds(cut, st.sampled_from(texts), st.floats(0, 1)),
        st.builds(drop_lines, st.sampled_from(texts), st.lists(st.integers(0, 10 ** 6), min_size=1, max_size=8)),
        st.builds(splice, st.sampled_from(texts), st.floats(0, 1),
                  st.text(alphabet=st.characters(blacklist_categories=['Cs']), max_size=40)),
    )


def check(parse, text):
    try:
        facts = parse(text)
    except ParseError as exc:
        assert str(exc)
        return
    assert facts['gpu_count'] == len(facts['gpus'])
    if facts['gpu_count'] == 0:
        assert facts['error'] and facts['error_kind']
    json.dumps(facts)


@given(inputs('rocminfo'))
def test_fuzz_rocminfo(text):
    check(parse_rocminfo, text)


@given(inputs('rocm-smi'))
def test_fuzz_rocm_smi(text):
    check(parse_rocm_smi, text)


@given(inputs('amd-smi'))
def test_fuzz_amd_smi(text):
    check(parse_amd_smi, text)


@given(st.lists(inputs('amd-smi'), min_size=2, max_size=3))
def test_fuzz_amd_smi_merge(texts):
    check(lambda _text: parse_amd_smi(*texts), None)


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
    gfx.split_gfx(text)
    gfx.parse_isa_name(text)


@given(st.integers(0, 200000))
def test_gfx_target_version_round_trips(number):
    target = gfx.decode_gfx_target_version(number)
    if target is not None:
        assert gfx.encode_gfx_target_version(target) == number
