# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_amd_smi over every captured amd-smi output; the expected values are read off the captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils._facts_common import ParseError
from ansible_collections.gpulab.rocm.plugins.module_utils.amd_smi import parse_amd_smi
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture, fixture_names

MB = 1024 * 1024

# file: (form, kind, [per-GPU facts]); only the keys listed are compared.
CASES = {
    'static-json-rx6600-navi23-proxmox-bare-array.json': ('json', 'static', [dict(
        index=0, device_id='0x73ff', device_rev='0xc7', subvendor_id='0x1043', subsystem_id=None,
        product_name='Navi 23 [Radeon RX 6600/6600 XT',  # truncated by amd-smi itself
        vendor='Advanced Micro Devices Inc. [AMD/ATI]', vbios='115-D534P00-100',
        vbios_version='020.003.000.030.000000', pcie_bus='0000:0b:00.0', max_link_width=16, max_link_speed_gts=16.0,
        power_cap_w=100.0, max_power_w=100.0, driver_version='7.0.0-3-pve', numa_node=0, vram_type='GDDR6',
        vram_vendor='MICRON', vram_total_bytes=8176 * MB, gfx_target='gfx1032', compute_units=None, unique_id=None)]),
    'static-json-strix-halo-gfx1151-bare-array-rocm6.3.json': ('json', 'static', [dict(
        device_id='0x1586', subsystem_id='0x8d1d', subvendor_id='0x103c', device_rev='0xd1',
        product_name='Strix Halo [Radeon Graphics / Radeon 8050S Graphics / Radeon 8060S Graphics]',
        gfx_target='gfx1151', compute_units=40, pcie_bus='0000:c4:00.0', max_link_width=None,
        max_link_speed_gts=None, power_cap_w=0.0, vram_total_bytes=32768 * MB, vram_type=None,
        vram_vendor=None, vbios='113-STRXLGEN-001', driver_version='6.17.1-300.fc43.x86_64')]),
    'metric-json-rx6600-navi23-proxmox-bare-array.json': ('json', 'metric', [dict(
        use_percent=1.0, power_w=6.0, sclk_mhz=800.0, mclk_mhz=541.0, temperature_c=36.0,
        temperatures_c={'edge': 36.0, 'hotspot': 37.0, 'mem': 32.0}, link_width=8, link_speed_gts=16.0,
        vram_total_bytes=8176 * MB, vram_used_bytes=202 * MB, fan_percent=0.0,
        perf_level='AMDSMI_DEV_PERF_LEVEL_AUTO')]),
    'metric-text-8x-mi300x-first-2-gpus.txt': ('text', 'metric', [
        dict(index=0, use_percent=0.0, power_w=137.0, sclk_mhz=245.0, mclk_mhz=900.0, temperature_c=38.0,
             temperatures_c={'hotspot': 38.0, 'mem': 31.0}, link_width=16, link_speed_gts=32.0,
             vram_total_bytes=196048 * MB, vram_used_bytes=282 * MB),
        dict(index=1, sclk_mhz=232.0, temperature_c=39.0, temperatures_c={'hotspot': 39.0, 'mem': 33.0})]),
    'metric-csv-8x-mi300x.csv': ('csv', 'metric', [
        dict(index=0, use_percent=0.0, power_w=133.0, sclk_mhz=132.0, mclk_mhz=900.0, temperature_c=36.0,
             temperatures_c={'hotspot': 36.0, 'mem': 30.0}, link_width=16, link_speed_gts=None,
             vram_total_bytes=196592 * MB, vram_used_bytes=283 * MB, perf_level='AMDSMI_DEV_PERF_LEVEL_AUTO'),
        dict(index=1, power_w=139.0, temperature_c=35.0)] + [dict(index=number) for number in range(2, 8)]),
    'list-2x-mi210-rocm6.3.3-unique-uuids.txt': ('text', 'list', [
        dict(index=0, pcie_bus='0000:03:00.0', uuid='67ff740f-0000-1000-80c6-3ac3c3c637f9',
             unique_id='0x67c63ac3c3c637f9', uuid_placeholder=False, kfd_id=12261, node_id=2, partition_id=0,
             device_id='0x740f', gfx_target='gfx90a'),
        dict(index=1, pcie_bus='0000:83:00.0', unique_id='0x95a1ca7691e7c391', kfd_id=36740, node_id=3)]),
    'list-2x-mi210-rocm6.3.3-duplicate-uuid.txt': ('text', 'list', [
        dict(index=0, uuid='00ff740f-0000-1000-8000-000000000000', unique_id=None, uuid_placeholder=True,
             kfd_id=22303, node_id=2, device_id='0x740f'),
        dict(index=1, pcie_bus='0000:83:00.0', unique_id=None, uuid_placeholder=True, kfd_id=31706, node_id=3)]),
    'list-mi300x-vf-azure-rocm7.0.0.txt': ('text', 'list', [dict(
        pcie_bus='0000:83:00.0', uuid='89ff74b5-0000-1000-80c1-fb66fcc143d2', unique_id='0x89c1fb66fcc143d2',
        kfd_id=21947, node_id=1, device_id='0x74b5', gfx_target='gfx942', sriov_vf=True)]),
    'list-json-strix-halo-gfx1151-bare-array-rocm6.3.json': ('json', 'list', [dict(
        pcie_bus='0000:c4:00.0', uuid_placeholder=True, unique_id=None, kfd_id=42905, node_id=1, partition_id=0,
        device_id='0x1586')]),
    'topology-json-rx6600-single-gpu.json': ('json', 'topology', [dict(index=0, pcie_bus='0000:0b:00.0')]),
    'default-table-mi300x-vf-azure-amdsmi26.0.0-rocm7.0.0.txt': ('table', 'default', [dict(
        index=0, pcie_bus='0000:83:00.0', product_name='AMD Instinct MI300X VF', temperature_c=37.0,
        power_w=135.0, power_cap_w=750.0, use_percent=0.0, vram_used_bytes=285 * MB,
        vram_total_bytes=196288 * MB, partitions={'compute': 'SPX', 'memory': 'NPS1'})]),
}


def test_every_capture_is_covered():
    others = {'fail-version-wsl2-driver-not-initialized.txt', 'noargs-usage-banner-container-amdsmi25.5.1-rocm6.4.4.txt'}
    assert set(CASES) | others == set(fixture_names('amd-smi'))


@pytest.mark.parametrize('name', sorted(CASES))
def test_capture(name):
    form, kind, gpus = CASES[name]
    facts = parse_amd_smi(fixture('amd-smi/' + name))
    assert (facts['forms'], facts['kinds']) == ([form], [kind])
    assert facts['gpu_count'] == len(gpus) == len(facts['gpus'])
    assert facts['error'] is None
    for found, expected in zip(facts['gpus'], gpus):
        for key, value in expected.items():
            assert found[key] == value, key


def test_default_table_versions():
    facts = parse_amd_smi(fixture('amd-smi/default-table-mi300x-vf-azure-amdsmi26.0.0-rocm7.0.0.txt'))
    assert (facts['amdsmi_version'], facts['rocm_version'], facts['driver_version']) == (
        '26.0.0+37d158ab', '7.0.0', '6.14.14')


def test_static_and_metric_of_one_host_merge_per_gpu():
    facts = parse_amd_smi(fixture('amd-smi/static-json-rx6600-navi23-proxmox-bare-array.json'),
                          fixture('amd-smi/metric-json-rx6600-navi23-proxmox-bare-array.json'))
    assert facts['kinds'] == ['static', 'metric'] and facts['gpu_count'] == 1
    gpu = facts['gpus'][0]
    # From static: ids and maximum link; from metric: the current link (x8 on an x16-capable card) and sensors.
    assert (gpu['device_id'], gpu['max_link_width'], gpu['max_link_speed_gts']) == ('0x73ff', 16, 16.0)
    assert (gpu['link_width'], gpu['link_speed_gts'], gpu['temperature_c']) == (8, 16.0, 36.0)
    assert gpu['vram_total_bytes'] == 8176 * MB and gpu['vram_used_bytes'] == 202 * MB


def test_gpu_data_wrapper_reads_like_the_bare_array():
    bare = fixture('amd-smi/static-json-strix-halo-gfx1151-bare-array-rocm6.3.json')
    wrapped = json.dumps({'gpu_data': json.loads(bare)})
    assert parse_amd_smi(wrapped)['gpus'] == parse_amd_smi(bare)['gpus']


def test_no_gpu_error_lines():
    facts = parse_amd_smi(fixture('amd-smi/fail-version-wsl2-driver-not-initialized.txt'))
    assert (facts['gpu_count'], facts['error_kind']) == (0, 'driver_not_loaded')
    assert 'amdgpu' in facts['error'] and len(facts['detail']) == 3


def test_usage_banner_is_a_clear_parse_error():
    with pytest.raises(ParseError, match=r'usage text \(amd-smi 25\.5\.1\+41065ee6.*amd-smi static --json'):
        parse_amd_smi(fixture('amd-smi/noargs-usage-banner-container-amdsmi25.5.1-rocm6.4.4.txt'))


@pytest.mark.parametrize('text, reason', [
    ('', 'not amd-smi output'),
    ('[{"gpu": 0, "asic": {"market_name": "MI210"', 'cut short'),
    ('{"cpu_data": []}', 'array of GPUs'),
    ('[{"asic": {}}]', 'without a "gpu" index'),
    ('GPU: 0\n    BDF: 0000:03:00.0\nPlease wait\n', 'not "KEY: value"'),
    ('gpu,gfx_activity\n0,1,2\n', 'CSV row has 3 fields'),
])
def test_garbage_and_truncated_input_raise_parse_error(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_amd_smi(text)
