# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_amd_smi over every captured amd-smi output; the expected values are read off the captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import io
import json

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import ParseError
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.amd_smi import parse_amd_smi
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
    # The firmware block under its ROCm 7.1 name, IFWI (an MI350X; VERSION in the new IFWI form, kept as printed).
    'static-text-mi350x-ifwi-amdsmi-dev-2026-gpu0-to-board.txt': ('text', 'static', [dict(
        index=0, device_id='0x75a0', product_name='AMD Instinct MI350X', gfx_target='gfx950', compute_units=128,
        pcie_bus='0000:05:00.0', max_link_width=16, max_link_speed_gts=32.0, unique_id=None,
        vbios='113-M350-01-1K0-920A', vbios_version='00154951', boot_firmware=None, driver_version='6.18.3',
        model='102-G36212-0C')]),
    # amd-smi 27.1 (ROCm 10.1): IFWI with BOOT_FIRMWARE, the legacy VBIOS version number.
    'static-ifwi-boot-firmware-amdsmi27.1-dev-name-redacted.txt': ('text', 'static', [dict(
        index=0, vbios='113-D7190300-104', vbios_version='00106507', boot_firmware='022.002.001.027.000001')]),
    # The capture above with "N/A" in the Partition-Mode cell (fixtures NOTES.md): no partition, not N and A.
    'default-table-mi300x-vf-azure-amdsmi26.0.0-rocm7.0.0-derived-partition-mode-na.txt': ('table', 'default', [dict(
        index=0, pcie_bus='0000:83:00.0', product_name='AMD Instinct MI300X VF', temperature_c=37.0,
        vram_total_bytes=196288 * MB, partitions=None)]),
    # An APU in the default view: Power-Usage '14 W' with no cap (amd-smi 26.1 on a Strix Halo, amdsmi#110).
    'default-table-strix-halo-8050s-amdsmi26.1.0-rocm6.4.1-power-14w-no-cap-cut.txt': ('table', 'default', [dict(
        index=0, pcie_bus='0000:c2:00.0', product_name='Radeon 8050S Graphics', power_w=14.0, power_cap_w=None,
        temperature_c=29.0, use_percent=7.0, vram_used_bytes=3056 * MB, vram_total_bytes=8192 * MB)]),
    # Another Strix Halo, ROCm 7.0.2: 'N/A/0 W', no power and a cap of 0 W, which is none.
    'default-table-strix-halo-gfx1151-amdsmi26.0.2-rocm7.0.2-power-na-cap-0w.txt': ('table', 'default', [dict(
        index=0, pcie_bus='0000:c5:00.0', product_name='AMD Radeon Graphics', power_w=None, power_cap_w=None,
        temperature_c=None, use_percent=None, vram_used_bytes=161 * MB, vram_total_bytes=512 * MB)]),
    # `amd-smi monitor -putm`: power with no cap column, GPU_TEMP (hotspot), MEM_TEMP, the GFX and memory clocks.
    'monitor-putm-8x-mi300x-rocm6.2-blog-table.txt': ('monitor', 'monitor', [
        dict(index=0, power_w=182.0, power_cap_w=None, temperature_c=42.0,
             temperatures_c={'hotspot': 42.0, 'mem': 41.0}, use_percent=83.0, sclk_mhz=1613.0, mclk_mhz=1230.0)]
        + [dict(index=number) for number in range(1, 7)]
        + [dict(index=7, power_w=118.0, temperature_c=40.0, sclk_mhz=120.0)]),
    # `amd-smi firmware` (text; FW_VERSION as amd-smi 24.7.1 prints it: decimal, hex pairs, PM in decimal bytes).
    'firmware-text-4x-mi300a-amdsmi24.7.1-rocm6.3.3.txt': ('text', 'firmware', [dict(index=number, firmware={
        'mec': '0x000000a6', 'mec2': '0x000000a6', 'rlc': '0x00000041', 'sdma0': '0x00000016',
        'sdma1': '0x00000016', 'vcn': '0x0611300c', 'sos': '0x00360150', 'ta_ras': '0x1b36020f',
        'ta_xgmi': '0x20000113', 'smc': '0x045567b8'}) for number in range(4)]),
    # The blog's MI300X (an older amd-smi: hex pairs without the leading zero, 61.13.00.C; PM 85.110.0).
    'firmware-text-mi300x-rocm6.2-blog-gpu0-only-cut.txt': ('text', 'firmware', [dict(index=0, firmware={
        'mec': '0x00000093', 'mec2': '0x00000093', 'rlc': '0x00000040', 'sdma0': '0x00000013',
        'sdma1': '0x00000013', 'vcn': '0x0611300c', 'sos': '0x0036024c', 'ta_ras': '0x2000000d',
        'ta_xgmi': '0x20000113', 'smc': '0x00556e00'})]),
}


# What the fixture amd-smi prints for the MI300X partition profile (tests/harness/mirror/recipes.py): the collection
# reads a GPU's partition from sysfs (parsers/pci.py), and amd-smi set's output only for its exit; not parsed here.
PARTITION_PROFILE = {'set-compute-partition-cpx-8x-mi300x-amd-guide.txt', 'set-compute-partition-spx-8x-mi300x-amd-guide.txt',
                     'set-memory-partition-nps1-8x-mi300x-amd-guide.txt', 'set-memory-partition-nps4-8x-mi300x-amd-guide.txt',
                     'static-partition-cpx-nps1-64-partitions-8x-mi300x-derived.txt',
                     'static-partition-cpx-nps4-64-partitions-8x-mi300x-amd-guide.txt',
                     'static-partition-spx-nps1-8x-mi300x-derived.txt'}


def test_every_capture_is_covered():
    others = {'fail-version-wsl2-driver-not-initialized.txt', 'noargs-usage-banner-container-amdsmi25.5.1-rocm6.4.4.txt'}
    assert set(CASES) | others | PARTITION_PROFILE == set(fixture_names('amd-smi'))


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


def test_the_firmware_block_in_json_is_read_under_either_name():
    # Not a capture: no `amd-smi static --json` of ROCm 7.1 or later was found. Built from the documented layout -
    # amd-smi's CLI stores amdsmi_get_gpu_vbios_info() under "ifwi" (amdsmi_cli static.py, which deleted
    # boot_firmware before 27.1) and AMD's 10.1.0 changelog: "The boot_firmware value ... now appears under the
    # IFWI section alongside NAME, BUILD_DATE, PART_NUMBER and VERSION". The values are the 27.1 capture's.
    block = {'name': 'N/A', 'build_date': '2024/06/05 12:13', 'part_number': '113-D7190300-104', 'version': '00106507'}
    for key, extra in (('vbios', {}), ('ifwi', {}), ('ifwi', {'boot_firmware': '022.002.001.027.000001'})):
        gpu = parse_amd_smi(json.dumps({'gpu_data': [{'gpu': 0, key: dict(block, **extra)}]}))['gpus'][0]
        assert (gpu['vbios'], gpu['vbios_version']) == ('113-D7190300-104', '00106507')
        assert gpu['boot_firmware'] == extra.get('boot_firmware')


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


# --- hostile and damaged input (issue 15): facts or a ParseError with the reason, never another exception ------

TABLE = 'amd-smi/default-table-mi300x-vf-azure-amdsmi26.0.0-rocm7.0.0.txt'
FIRST_ROW = '| 0000:83:00.0 AMD Instinct MI300X VF | 0 %      37 °C   0           135/750 W |'
SECOND_ROW = '|   0       0       0        SPX/NPS1 | 0 %        N/A           285/196288 MB |'
DIGITS = '1' + '0' * 400  # overflows a float (float(DIGITS) is inf) and 2**64
HUGE = '1' + '0' * 5000  # over Python's 4300-digit limit for int(str)


def valid(facts):
    """The facts as Ansible sends them back: strict JSON (no NaN or Infinity), gpu_count matching gpus."""
    json.dumps(facts, allow_nan=False)
    assert facts['gpu_count'] == len(facts['gpus'])
    return facts


def one_gpu(entry):
    entry = dict(entry, gpu=0)
    return valid(parse_amd_smi(json.dumps([entry])))['gpus'][0]


@pytest.mark.parametrize('section', ['asic', 'temperature', 'mem_usage', 'vram', 'bus', 'partition', 'limit'])
@pytest.mark.parametrize('value', ['N/A', 'hot', [1, 2], [{'value': 1, 'unit': 'C'}], 7])
def test_a_section_that_is_not_an_object_is_no_value(section, value):
    gpu = one_gpu({section: value, 'power': {'socket_power': {'value': 42, 'unit': 'W'}}})
    assert gpu['power_w'] == 42.0  # the other sections are still read
    assert gpu['temperatures_c'] == {} and gpu['vram_total_bytes'] is None and gpu['partitions'] is None


@pytest.mark.parametrize('unit, expected', [
    ('MB', 5 * MB), ('GB', 5 * 1024 * MB), (None, 5 * MB), ('', 5 * MB),
    (3, None), ([], None), ({'a': 1}, None), (True, None), ('furlongs', None),
])
def test_a_unit_that_is_not_a_size_unit_gives_no_size(unit, expected):
    gpu = one_gpu({'mem_usage': {'total_vram': {'value': 5, 'unit': unit}, 'used_vram': {'value': 1, 'unit': unit}}})
    assert gpu['vram_total_bytes'] == expected


@pytest.mark.parametrize('number', [DIGITS, DIGITS + '.5', '1e999', '-1e999', HUGE, 'NaN', 'Infinity', '-Infinity'])
def test_numbers_out_of_range_in_json_are_no_value(number):
    text = ('[{"gpu": 0, "power": {"socket_power": {"value": %s, "unit": "W"}}, "temperature": {"edge": %s},'
            ' "mem_usage": {"total_vram": {"value": %s, "unit": "GB"}, "used_vram": %s}, "kfd_id": %s}]'
            % ((number,) * 5))
    gpu = valid(parse_amd_smi(text))['gpus'][0]
    assert (gpu['power_w'], gpu['temperature_c'], gpu['vram_total_bytes'], gpu['kfd_id']) == (None,) * 4
    assert gpu['vram_use_percent'] is None


def test_a_gpu_index_out_of_range_is_refused():
    with pytest.raises(ParseError, match='without a "gpu" index'):
        parse_amd_smi('[{"gpu": %s}]' % HUGE)


@pytest.mark.parametrize('number', [DIGITS, HUGE, DIGITS + '.5'])
def test_numbers_out_of_range_in_text_csv_and_table_are_no_value(number):
    metric = fixture('amd-smi/metric-text-8x-mi300x-first-2-gpus.txt').replace('137 W', number + ' W')
    assert valid(parse_amd_smi(metric))['gpus'][0]['power_w'] is None
    rows = list(csv.reader(fixture('amd-smi/metric-csv-8x-mi300x.csv').splitlines()))
    rows[1] = [number if column in ('socket_power', 'total_vram') else cell for column, cell in zip(rows[0], rows[1])]
    out = io.StringIO()
    csv.writer(out).writerows(rows)
    gpu = valid(parse_amd_smi(out.getvalue()))['gpus'][0]
    assert (gpu['power_w'], gpu['vram_total_bytes']) == (None, None)
    table = fixture(TABLE).replace('37 °C', number + ' °C').replace('285/196288 MB', '285/' + number + ' MB')
    gpu = valid(parse_amd_smi(table))['gpus'][0]
    assert (gpu['temperature_c'], gpu['vram_total_bytes'], gpu['vram_use_percent']) == (None, None, None)


@pytest.mark.parametrize('text', [
    '[{"gpu": 0, "x": ' + '[' * 100000 + ']' * 100000 + '}]',
    '[{"gpu": 0, "x": ' + '{"a": ' * 5000 + '1' + '}' * 5000 + '}]',
    '{"gpu_data": ' + '[' * 40 + ']' * 40 + '}',
])
def test_deeply_nested_json_is_refused(text):
    with pytest.raises(ParseError, match='nests more than 32 levels'):
        parse_amd_smi(text)


def test_deeply_indented_text_is_refused():
    text = 'GPU: 0\n' + ''.join(' ' * depth + 'KEY_{0}:\n'.format(depth) for depth in range(1, 3000))
    with pytest.raises(ParseError, match='nests keys more than 32 levels'):
        parse_amd_smi(text + ' ' * 3000 + 'VALUE: 1\n')


def test_brackets_inside_json_strings_are_no_nesting():
    gpu = one_gpu({'asic': {'market_name': '[' * 100 + '{' * 100}})
    assert gpu['product_name'] == '[' * 100 + '{' * 100


def test_a_csv_field_over_128_kib_is_refused():
    with pytest.raises(ParseError, match='CSV output is damaged.*field larger than field limit'):
        parse_amd_smi('gpu,edge\n0,"' + 'x' * 200000 + '"\n')


@pytest.mark.parametrize('row, reason', [
    (FIRST_ROW[:-1], 'not two cells'),  # no closing |
    (FIRST_ROW[:50], 'not two cells'),  # cut inside the row
    ('| 0000:83:00.0 AMD Instinct MI300X VF |', 'not two cells'),  # one cell
    ('|| 0000:83:00.0 AMD Instinct MI300X VF | 0 % |', 'not two cells'),  # three cells
    ('| 0000:83:00.0 | 0 % |', 'only its first row'),  # the second row became a first one
])
def test_damaged_table_rows_are_refused(row, reason):
    text = fixture(TABLE).replace(FIRST_ROW, row) if 'first row' not in reason else fixture(TABLE).replace(
        SECOND_ROW, row)
    with pytest.raises(ParseError, match=reason):
        parse_amd_smi(text)


def test_a_second_row_with_few_cells_gives_what_it_has():
    gpu = valid(parse_amd_smi(fixture(TABLE).replace(SECOND_ROW, '|   0 | 0 % |')))['gpus'][0]
    assert (gpu['index'], gpu['partitions'], gpu['use_percent'], gpu['vram_total_bytes']) == (0, None, 0.0, None)


@pytest.mark.parametrize('end, keep, reason', [
    (SECOND_ROW, 12, 'not two cells'),  # inside the second row
    (SECOND_ROW, 0, 'ends after the first row'),  # before the second row
    ('|=====', 0, 'header but no GPU rows'),  # before the GPU box
])
def test_a_table_cut_before_its_gpu_rows_are_whole_is_refused(end, keep, reason):
    text = fixture(TABLE)
    with pytest.raises(ParseError, match=reason + '.*cut short'):
        parse_amd_smi(text[:text.index(end) + keep])


@pytest.mark.parametrize('cell, expected', [
    ('SPX/NPS1', {'compute': 'SPX', 'memory': 'NPS1'}), ('CPX/NPS4', {'compute': 'CPX', 'memory': 'NPS4'}),
    ('N/A', None), ('n/a', None), ('N/A/N/A', None), ('SPX/N/A', {'compute': 'SPX', 'memory': None}),
    ('N/A/NPS1', {'compute': None, 'memory': 'NPS1'}), ('/', None), ('SPX/', None), ('SPX', None),
])
def test_partition_mode_cell(cell, expected):
    row = '|   0       0       0 {0:>15} | 0 %        N/A           285/196288 MB |'.format(cell)
    gpu = valid(parse_amd_smi(fixture(TABLE).replace(SECOND_ROW, row)))['gpus'][0]
    assert gpu['partitions'] == expected


@pytest.mark.parametrize('text', [
    'hello\n[ERROR] something failed\n',
    '\x00\xff\x13garbage\n{not json at all}\n',
    bytes(range(256)).decode('latin-1') * 3,
    'WARNING: x\n{"gpu_data": [1, 2,, 3]}',
    'GPU: 0\n    BDF: 0000:03:00.0\n{ note: this is text }\n',
])
def test_text_that_is_not_json_is_not_called_cut_short(text):
    with pytest.raises(ParseError) as info:
        parse_amd_smi(text)
    assert 'cut short' not in str(info.value)


@pytest.mark.parametrize('text', [
    '[{"gpu": 0, "asic": {"market_name": "MI210"',
    '[{"gpu": 0, "asic": {"market_name": "MI2',
    '[{"gpu": 0, "asic": {"market_name": "MI210\\',
    '{"gpu_data": [\n  {"gpu": 0,\n',
    'WARNING: x\n[',
])
def test_json_that_ends_early_is_cut_short(text):
    with pytest.raises(ParseError, match='JSON output is cut short'):
        parse_amd_smi(text)
