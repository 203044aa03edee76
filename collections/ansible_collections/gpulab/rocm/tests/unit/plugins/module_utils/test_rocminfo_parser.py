# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_rocminfo over every captured rocminfo output; the expected values are read off the captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import ParseError
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocminfo import parse_rocminfo
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture, fixture_names

KB = 1024

# file: (system facts, [GPU agents' facts]); only the keys listed are compared.
LISTINGS = {
    'gfx942-mi300x-vf-rocm6.4.0.txt': (
        dict(runtime_version='1.15', runtime_ext_version='1.7', rock_loaded=True, rock_version='6.12.12',
             complete=True, cpu_count=1, gfx_targets=['gfx942'], target_ids=['gfx942:sramecc+:xnack-'], wsl=False),
        [dict(name='gfx942', marketing_name='AMD Instinct MI300X VF', vendor='AMD', uuid='GPU-f91d9f93a2e6d19d',
              unique_id='0xf91d9f93a2e6d19d', node=1, chip_id=29877, pci_device_id='0x74b5', bdfid=1280,
              pci_bus='0000:05:00.0', compute_units=304, simds_per_cu=4, shader_engines=32, wavefront_size=64,
              max_clock_mhz=2100, max_waves_per_cu=32, asic_revision=1,
              cache_bytes={'L1': 32 * KB, 'L2': 4096 * KB, 'L3': 262144 * KB}, vram_bytes=200998912 * KB,
              target_id='gfx942:sramecc+:xnack-')],
    ),
    'gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt': (
        dict(runtime_version='1.1', rock_loaded=True, rock_version=None, cpu_count=4, gfx_targets=['gfx90a'],
             target_ids=['gfx90a:sramecc+:xnack-']),
        [dict(name='gfx90a', marketing_name='AMD Instinct MI250X', uuid='GPU-a98e0d77ca91cb4a', node=4,
              chip_id=29704, pci_device_id='0x7408', pci_bus='0000:d1:00.0', compute_units=110, simds_per_cu=4,
              wavefront_size=64, max_clock_mhz=1700, cache_bytes={'L1': 16 * KB, 'L2': 8192 * KB},
              vram_bytes=67092480 * KB)],
    ),
    'gfx908-mi100-plus-gfx1036-igpu-rocm5.7.0.txt': (
        dict(runtime_version='1.1', cpu_count=1, gfx_targets=['gfx1036', 'gfx908'],
             target_ids=['gfx1036', 'gfx908:sramecc+:xnack-']),
        [dict(name='gfx908', marketing_name='AMD Instinct MI100', uuid='GPU-cafb6d633e33407e', node=1,
              pci_device_id='0x738c', pci_bus='0000:03:00.0', compute_units=120, simds_per_cu=4, wavefront_size=64,
              max_clock_mhz=1502, cache_bytes={'L1': 16 * KB, 'L2': 8192 * KB}, vram_bytes=33538048 * KB),
         dict(name='gfx1036', marketing_name='AMD Radeon Graphics', uuid='GPU-XX', unique_id=None, node=2,
              chip_id=5710, pci_device_id='0x164e', pci_bus='0000:0e:00.0', compute_units=2, simds_per_cu=2,
              wavefront_size=32, max_clock_mhz=2200, cache_bytes={'L1': 16 * KB, 'L2': 256 * KB},
              vram_bytes=524288 * KB)],
    ),
    'gfx1030-rx6900xt-rocm6.4.txt': (
        dict(runtime_version='1.15', rock_version='6.12.12', cpu_count=1, gfx_targets=['gfx1030']),
        [dict(marketing_name='AMD Radeon RX 6900 XT', uuid='GPU-186551e29c59bd0d', chip_id=29631,
              pci_device_id='0x73bf', bdfid=26368, pci_bus='0000:67:00.0', compute_units=80, simds_per_cu=2,
              wavefront_size=32, max_clock_mhz=2660,
              cache_bytes={'L1': 16 * KB, 'L2': 4096 * KB, 'L3': 131072 * KB}, vram_bytes=16760832 * KB)],
    ),
    'gfx1100-rx7900xtx-wsl2-rocm6.3.txt': (
        dict(runtime_version='1.1', runtime_ext_version='1.6', wsl=True, rock_loaded=None, cpu_count=1,
             gfx_targets=['gfx1100']),
        # The WSL build prints neither BDFID nor Uuid for the GPU.
        [dict(marketing_name='AMD Radeon RX 7900 XTX', uuid=None, bdfid=None, pci_bus=None, chip_id=29772,
              pci_device_id='0x744c', compute_units=96, wavefront_size=32, max_clock_mhz=2526,
              cache_bytes={'L1': 32 * KB, 'L2': 6144 * KB, 'L3': 98304 * KB}, vram_bytes=25079976 * KB)],
    ),
    'gfx1102-rx7600-rocm7-rock6.16.13-sudo.txt': (
        # The paste ends at the last ISA line, without "*** Done ***".
        dict(runtime_version='1.18', runtime_ext_version='1.15', rock_version='6.16.13', complete=False,
             gfx_targets=['gfx1102'], target_ids=['gfx1102']),
        [dict(marketing_name='AMD Radeon RX 7600', uuid='GPU-XX', unique_id=None, pci_device_id='0x7480',
              pci_bus='0000:03:00.0', compute_units=32, simds_per_cu=2, wavefront_size=32, max_clock_mhz=2356,
              cache_bytes={'L1': 32 * KB, 'L2': 2048 * KB}, vram_bytes=8372224 * KB)],
    ),
    'gfx803-radeon-pro-wx3200-rocm4.3.1.txt': (
        dict(runtime_version='1.1', rock_loaded=True, gfx_targets=['gfx803']),
        [dict(marketing_name='Lexa XT [Radeon PRO WX 3200]', chip_id=27009, pci_device_id='0x6981',
              pci_bus='0000:01:00.0', compute_units=10, simds_per_cu=4, wavefront_size=64, max_clock_mhz=1295,
              cache_bytes={'L1': 16 * KB}, vram_bytes=4194304 * KB)],
    ),
    'gfx803-rx470-rocm1.9-old-format-2018.txt': (
        # ROCm 1.x: no ROCk line, no Uuid or Marketing Name, bare numbers, "Max Clock Frequency (MHz):1281".
        dict(runtime_version='1.1', rock_loaded=None, complete=True, cpu_count=1, gfx_targets=['gfx803']),
        [dict(name='gfx803', marketing_name=None, uuid=None, chip_id=26591, pci_device_id='0x67df',
              pci_bus='0000:01:00.0', compute_units=32, simds_per_cu=None, wavefront_size=64, max_clock_mhz=1281,
              max_waves_per_cu=40, cache_bytes={'L1': 16 * KB}, vram_bytes=4194304 * KB)],
    ),
}

# file: (error_kind, words the error must contain, rock_loaded)
FAILURES = {
    'fail-rock-not-loaded-azure-mi25.txt': ('driver_not_loaded', ['amdgpu', 'reboot', '--device=/dev/kfd'], False),
    'fail-rock-not-loaded-no-dev-kfd-hsa-out-of-resources-rocm4.0.txt': ('driver_not_loaded', ['amdgpu'], False),
    'fail-kfd-permission-denied-vega-fe-rocm4.1.txt': ('permission_denied', ['render', 'video', 'new login'], True),
    'fail-kfd-invalid-argument-mi300x-container-rocm6.2.1.txt': ('kfd_invalid_argument', ['--device=/dev/dri'],
                                                                 True),
    'fail-hsa-out-of-resources-rocm6.3.2-rx7900xtx.txt': ('hsa_out_of_resources', ['render', 'new login'], True),
    'fail-hsa-out-of-resources-rocm7-nonroot-rx7600.txt': ('hsa_out_of_resources', ['render'], True),
    'fail-hsa-api-call-failure-line900-rocm1.8-vega64.txt': ('hsa_error', ['HSA runtime call failed'], None),
    # Debian's rocminfo on a machine without a GPU colours the line with ANSI escapes, even into a pipe.
    'debian12-rocminfo5.2.3-no-gpu-ansi-colour-stdout.txt': ('driver_not_loaded', ['amdgpu'], False),
}


def test_every_capture_is_covered():
    covered = set(LISTINGS) | set(FAILURES) | {'cpu-only-no-gpu-agents-8x-mi300x-init-failed-rocm6.3.3.txt'}
    assert covered == set(fixture_names('rocminfo'))


@pytest.mark.parametrize('name', sorted(LISTINGS))
def test_listing(name):
    system, gpus = LISTINGS[name]
    facts = parse_rocminfo(fixture('rocminfo/' + name))
    for key, value in system.items():
        assert facts[key] == value, key
    assert facts['gpu_count'] == len(gpus) == len(facts['gpus'])
    assert facts['error'] is None and facts['error_kind'] is None
    assert len(facts['agents']) == facts['cpu_count'] + facts['gpu_count']
    for found, expected in zip(facts['gpus'], gpus):
        assert found['device_type'] == 'GPU'
        for key, value in expected.items():
            assert found[key] == value, key


def test_pools_flags_and_isas_of_mi300x():
    gpu = parse_rocminfo(fixture('rocminfo/gfx942-mi300x-vf-rocm6.4.0.txt'))['gpus'][0]
    assert [(pool['segment'], pool['flags'], pool['size_bytes']) for pool in gpu['pools']] == [
        ('GLOBAL', ['COARSE GRAINED'], 200998912 * KB),
        ('GLOBAL', ['EXTENDED FINE GRAINED'], 200998912 * KB),
        ('GLOBAL', ['FINE GRAINED'], 200998912 * KB),
        ('GROUP', [], 64 * KB),
    ]
    assert gpu['pools'][0]['alloc_recommended_granule_bytes'] == 2048 * KB  # "Alloc Recommended Granule:2048KB"
    assert gpu['pools'][0]['accessible_by_all'] is False
    assert [(isa['target_id'], isa['generic']) for isa in gpu['isas']] == [
        ('gfx942:sramecc+:xnack-', False), ('gfx9-4-generic:sramecc+:xnack-', True)]
    assert gpu['isas'][0]['features'] == ['sramecc+', 'xnack-']


def test_cpu_agents_of_the_4_numa_node_host():
    facts = parse_rocminfo(fixture('rocminfo/gfx90a-mi250x-gcd-4numa-epyc7a53-rocm5.7.txt'))
    cpus = [agent for agent in facts['agents'] if agent['device_type'] == 'CPU']
    assert [cpu['node'] for cpu in cpus] == [0, 1, 2, 3]
    assert all(cpu['marketing_name'] == 'AMD EPYC 7A53 64-Core Processor' and cpu['compute_units'] == 32
               for cpu in cpus)
    assert cpus[0]['pools'][0]['size_bytes'] == 131320684 * KB


def test_old_format_typo_and_empty_flag_list():
    old = parse_rocminfo(fixture('rocminfo/gfx803-rx470-rocm1.9-old-format-2018.txt'))
    assert old['agents'][0]['max_clock_mhz'] == 3300  # "Max Clock Frequency (MHz):3300", no space
    assert old['gpus'][0]['pools'][0]['accessible_by_all'] is False  # "Acessible by all" (sic)
    assert old['agents'][0]['pools'][0]['accessible_by_all'] is True
    mixed = parse_rocminfo(fixture('rocminfo/gfx908-mi100-plus-gfx1036-igpu-rocm5.7.0.txt'))
    assert mixed['gpus'][0]['pools'][1]['segment'] == 'GLOBAL' and mixed['gpus'][0]['pools'][1]['flags'] == []


def test_runtime_up_but_no_gpu_agent():
    facts = parse_rocminfo(fixture('rocminfo/cpu-only-no-gpu-agents-8x-mi300x-init-failed-rocm6.3.3.txt'))
    assert (facts['gpu_count'], facts['cpu_count'], facts['runtime_version']) == (0, 2, '1.14')
    assert facts['rock_version'] == '6.10.5'
    assert facts['error_kind'] == 'no_gpu_agent' and 'dmesg' in facts['error']


@pytest.mark.parametrize('name', sorted(FAILURES))
def test_failure_messages(name):
    kind, words, rock_loaded = FAILURES[name]
    facts = parse_rocminfo(fixture('rocminfo/' + name))
    assert facts['gpu_count'] == 0 and facts['gpus'] == [] and facts['agents'] == []
    assert facts['error_kind'] == kind
    for word in words:
        assert word in facts['error']
    assert facts['rock_loaded'] is rock_loaded
    assert facts['detail']  # the tool's own lines are kept


def test_permission_detail_keeps_the_group_line():
    facts = parse_rocminfo(fixture('rocminfo/fail-kfd-permission-denied-vega-fe-rocm4.1.txt'))
    assert 'aaron is member of render group' in facts['detail']


@pytest.mark.parametrize('text, reason', [
    ('', 'not rocminfo output'),
    ('Segmentation fault (core dumped)\n', 'not rocminfo output'),
    ('=====================\nHSA System Attributes\n=====================\nRuntime Version:         1.1\n', 'cut short'),
])
def test_garbage_and_truncated_input_raise_parse_error(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_rocminfo(text)


def test_output_cut_inside_an_agent_is_a_parse_error():
    text = fixture('rocminfo/gfx942-mi300x-vf-rocm6.4.0.txt')
    cut = text[:text.index('  Device Type:             GPU')]
    with pytest.raises(ParseError, match='agent 2 has no Device Type'):
        parse_rocminfo(cut)


def test_output_cut_before_the_first_agent_is_a_parse_error():
    text = fixture('rocminfo/gfx1030-rx6900xt-rocm6.4.txt')
    with pytest.raises(ParseError, match='lists no agent'):
        parse_rocminfo(text[:text.index('Agent 1')])


# --- output cut short or joined (issue 15): refused with the reason, never reported as plain success -----------

MI300X = 'rocminfo/gfx942-mi300x-vf-rocm6.4.0.txt'
WITH_GPUS = sorted(LISTINGS)


def last_agent_at(text):
    return text.rindex('\nAgent ')


def cuts(text):
    """Places inside the last agent where a cut output can end (rocminfo prints "ISA Info" last)."""
    at = last_agent_at(text)
    yield 'after the title', re.compile(r'^\*+[ \t]*\n', re.M).search(text, at).end()
    yield 'inside a line', text.index('Name:', at) + 8
    yield 'inside Pool Info', text.index('Pool Info', at) + 40
    if text.find('\n    ISA 1', at) > 0:  # a GPU agent: ISA Info lists its ISAs (a CPU agent's is empty)
        yield 'after "ISA Info:"', text.index('\n', text.index('ISA Info:', at)) + 1
        yield 'inside ISA 1', text.index('Workgroup Max Size', text.index('ISA 1', at))
        yield 'inside the last FBarrier line', text.rindex('FBarrier Max Size') + 10


@pytest.mark.parametrize('name', WITH_GPUS + ['cpu-only-no-gpu-agents-8x-mi300x-init-failed-rocm6.3.3.txt'])
def test_output_cut_inside_the_last_agent_is_a_parse_error(name):
    text = fixture('rocminfo/' + name)
    for where, at in cuts(text):
        with pytest.raises(ParseError, match=r'cut short inside agent \d+|agent \d+ has no') as info:
            parse_rocminfo(text[:at])
        assert 'Save the whole output' in str(info.value), where


@pytest.mark.parametrize('name', WITH_GPUS)
def test_output_cut_after_the_last_isa_is_read_as_incomplete(name):
    text = fixture('rocminfo/' + name)
    whole = parse_rocminfo(text)
    cut = parse_rocminfo(text[:text.rindex('FBarrier Max Size')] + 'FBarrier Max Size:       32\n')
    assert cut['complete'] is False
    assert (cut['gpus'], cut['gfx_targets'], cut['error']) == (whole['gpus'], whole['gfx_targets'], None)


@pytest.mark.parametrize('first, second', [
    (MI300X, MI300X),
    ('rocminfo/gfx1030-rx6900xt-rocm6.4.txt', 'rocminfo/gfx908-mi100-plus-gfx1036-igpu-rocm5.7.0.txt'),
    ('rocminfo/gfx1102-rx7600-rocm7-rock6.16.13-sudo.txt', MI300X),  # the first one has no "*** Done ***"
])
def test_two_outputs_joined_are_a_parse_error(first, second):
    with pytest.raises(ParseError, match='holds 2 rocminfo outputs.*counted twice'):
        parse_rocminfo(fixture(first) + '\n' + fixture(second))


def test_agent_lists_joined_are_a_parse_error():
    text = fixture(MI300X)
    agents = text[re.search(r'^\*+[ \t]*\nAgent 1', text, re.M).start():]
    with pytest.raises(ParseError, match='"Agent 1" where "Agent 3" should come'):
        parse_rocminfo(text.replace('*** Done ***', '') + agents)
    renumbered = agents.replace('Agent 2', 'Agent 4').replace('Agent 1', 'Agent 3')
    with pytest.raises(ParseError, match='goes on with agent 3 after "\\*\\*\\* Done \\*\\*\\*"'):
        parse_rocminfo(text + renumbered)


@pytest.mark.parametrize('digits', [400, 5000])
def test_numbers_of_hundreds_of_digits_are_null(digits):
    number = '1' + '0' * digits
    text = fixture(MI300X).replace('200998912(0xbfb0000) KB', number + ' KB').replace(
        'Compute Unit:            304', 'Compute Unit:            ' + number).replace('BDFID:', 'BDFID: ' + number)
    facts = parse_rocminfo(text)
    json.dumps(facts, allow_nan=False)
    gpu = facts['gpus'][0]
    assert (gpu['compute_units'], gpu['vram_bytes'], gpu['pools'][0]['size_bytes']) == (None, None, None)
    assert gpu['pools'][3]['size_bytes'] == 64 * KB
