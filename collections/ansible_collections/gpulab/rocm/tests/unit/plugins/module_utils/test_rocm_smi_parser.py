# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parse_rocm_smi over every captured rocm-smi output; the expected values are read off the captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import ParseError
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocm_smi import JSON_ARGS, parse_rocm_smi
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture, fixture_names

# file: (form, driver_version, [per-GPU facts]); only the keys listed are compared.
CASES = {
    'json-raw-oneline-showtemp-showuse-showpower-meminfo-vram-rx7900xtx.json': ('json', None, [dict(
        index=0, card='card0', temperature_c=49.0, temperatures_c={'edge': 49.0, 'junction': 49.0, 'memory': 62.0},
        power_w=19.0, use_percent=0.0, vram_total_bytes=25753026560, vram_used_bytes=794341376, device_id=None)]),
    'json-showallinfo-rx6600-navi23-jq-reformatted.json': ('json', '7.0.0-3-pve', [dict(
        device_id='0x73ff', device_rev='0xc7', subsystem_id='0x05d5', guid=17901, unique_id=None,
        vbios='115-D534P00-100', perf_level=None, use_percent=0.0, vram_use_percent=1.0,
        memory_vendor='micron', pcie_bus='0000:0b:00.0', product_name='Navi 23 [Radeon RX 6600/6600 XT/6600M]',
        vendor='Advanced Micro Devices, Inc. [AMD/ATI]', sku='D534P00', node_id=1, gfx_target='gfx1032')]),
    'json-showproductname-showuse-showmeminfo-vram-rx7900xt.json': ('json', None, [dict(
        product_name='Radeon RX 7900 XT', device_id='0x744c', sku='D70401XT', subsystem_id='0x471e',
        device_rev='0xcc', node_id=1, guid=26967, gfx_target='gfx1100', vram_total_bytes=21458059264,
        vram_used_bytes=27856896, use_percent=0.0)]),
    'json-telegraf-flags-mi50-32gb-driver5.9.17-card0-only.json': ('json', '5.9.17', [dict(
        device_id='0x66a1', unique_id='0x02f048617326b1ea', vbios='113-D1631700-111', temperature_c=36.0,
        temperatures_c={'edge': 36.0, 'junction': 38.0, 'memory': 35.0}, sclk_mhz=1725.0, mclk_mhz=1000.0,
        link_speed_gts=16.0, link_width=16, power_w=26.0, power_cap_w=225.0, fan_percent=0.0, perf_level='high',
        serial='692024000810', voltage_mv=1000.0, pcie_bus='0000:63:00.0', vram_total_bytes=34342961152,
        vram_used_bytes=10850304, product_name='Radeon Instinct MI50 32GB', sku='D16317', numa_node=0,
        gfx_target='gfx906')]),
    'json-telegraf-flags-rx6700xt-rocm4.3.0.json': ('json', '6.3.6', [dict(
        # ROCm 4.3 prints "Card series": "0x1002" (a bug), so no product name.
        device_id='0x73df', product_name=None, series=None, sclk_mhz=500.0, mclk_mhz=96.0, link_speed_gts=16.0,
        link_width=16, power_cap_w=211.0, pcie_bus='0000:07:00.0', vram_total_bytes=12868124672,
        temperatures_c={'edge': 45.0, 'junction': 47.0, 'memory': 46.0}, gfx_target='gfx1031', sku='67XA6S')]),
    'json-telegraf-flags-rx6700xt-rocm6.1.2.json': ('json', '6.3.6', [dict(
        device_id='0x73df', product_name='Navi 22 [Radeon RX 6700/6700 XT / 6800M]', guid=55069, sclk_mhz=0.0,
        mclk_mhz=96.0, vram_use_percent=12.0, vram_used_bytes=1572745216, gfx_target='gfx1031', node_id=1,
        numa_node=0)]),
    'json-telegraf-flags-vega10-xt-driver5.9.25.json': ('json', '5.9.25', [dict(
        device_id='0x6861', unique_id='0x02150e7d042a1124', sclk_mhz=1269.0, mclk_mhz=167.0, link_speed_gts=8.0,
        link_width=16, fan_percent=13.0, power_w=15.0, power_cap_w=170.0, vram_total_bytes=17163091968,
        temperatures_c={'edge': 39.0, 'junction': 40.0, 'memory': 92.0}, gfx_target='gfx900')]),
    'json-a-no-gpus-warning-driver-6.3.6.txt': ('json', '6.3.6', []),
    'csv-showproductname-showmeminfo-vram-showuniqueid-rx6800xt-plus-raphael.txt': ('csv', None, [
        dict(card='card0', unique_id='0x9246____________', vram_total_bytes=17163091968, vram_used_bytes=692142080,
             product_name='Navi 21 [Radeon RX 6800/6800 XT / 6900 XT]', device_id='0x73bf', sku='001',
             vendor='Advanced Micro Devices Inc. [AMD/ATI]', subsystem_id='0x2406', device_rev='0xc1', node_id=1,
             guid=45534, gfx_target='gfx1030'),
        dict(card='card1', unique_id=None, vram_total_bytes=67108864, product_name='Raphael', device_id='0x164e',
             sku='RAPHAEL', node_id=2, guid=52156, gfx_target='gfx1036')]),
    'csv-showproductname-showuse-showmeminfo-vram-rx7900xt.txt': ('csv', None, [dict(
        use_percent=0.0, vram_total_bytes=21458059264, product_name='Radeon RX 7900 XT', device_id='0x744c',
        gfx_target='gfx1100')]),
    'showallinfo-a-4x-mi300x-vf-sriov-driver6.7.0.txt': ('text', '6.7.0', [
        dict(index=0, device_id='0x74a1', unique_id='0x8d1457e2c20f59d2', vbios='113-MI3SRIOV-001',
             temperature_c=35.0, temperatures_c={'junction': 35.0, 'memory': 33.0}, sclk_mhz=137.0, mclk_mhz=900.0,
             power_w=133.0, power_cap_w=750.0, use_percent=0.0, pcie_bus='0000:26:00.0', serial='692347006052',
             product_name='AMD Instinct MI300X OAM', sku='MI3SRIOV', sriov_vf=True, gfx_target='gfx942',
             partitions={'compute': 'SPX', 'memory': 'NPS1'}),
        dict(index=1, unique_id='0xb4fa34630e85d42a', sclk_mhz=133.0, power_w=130.0, pcie_bus='0000:46:00.0'),
        dict(index=2, unique_id='0xe8986800e182538a', sclk_mhz=141.0, power_w=131.0, pcie_bus='0000:65:00.0'),
        dict(index=3, unique_id='0xeff71edc82169115', temperature_c=39.0, power_w=136.0, pcie_bus='0000:85:00.0')]),
    # The firmware section on its own (`rocm-smi -a`, cut to that section): an iGPU with every block rocm-smi 5.6
    # knows; "00.00.00.00" and 0x00000000 mean no firmware loaded.
    'showallinfo-a-firmware-section-raphael-igpu-0x164e-rocm5.6-driver6.1.5-fragment.txt': ('text', None, [dict(
        index=0, firmware={'asd': '0x21000091', 'ce': '0x00000002', 'me': '0x0000000d', 'mec': '0x00000012',
                           'mec2': '0x00000012', 'pfp': '0x0000000d', 'rlc': '0x0000001a', 'rlc_srlc': '0x00000001',
                           'rlc_srlg': '0x00000001', 'rlc_srls': '0x00000001', 'sdma0': '0x00000001',
                           'smc': '0x00544fdd', 'vcn': '0x02118000'})]),
    'showallinfo-a-phoenix1-780m-apu-rocm6.1.1.txt': ('text', '6.10.0-061000rc1-generic', [dict(
        # "Subsystem ID: Radeon HD 6470M" is a name where an id belongs; "GFX Version: gfx11003" means gfx1103.
        device_id='0x15bf', device_rev='0xc9', subsystem_id=None, product_name='Phoenix1', guid=4765,
        temperature_c=55.0, sclk_mhz=1798.0, mclk_mhz=800.0, power_w=15.171, power_cap_w=None, use_percent=99.0,
        voltage_mv=944.0, pcie_bus='0000:c3:00.0', gfx_target='gfx1103', sku='PHXGENERIC', unique_id=None)]),
    'showproductname-2x-mi210-rocm6.3.3.txt': ('text', None, [
        dict(index=0, product_name='Instinct MI210', device_id='0x740f', sku='D67301', subsystem_id='0x0c34',
             device_rev='0x02', node_id=2, guid=12261, gfx_target='gfx90a'),
        dict(index=1, product_name='Instinct MI210', node_id=3, guid=36740, gfx_target='gfx90a')]),
    'showuniqueid-2x-mi210-na-rocm6.3.3.txt': ('text', None, [dict(index=0, unique_id=None),
                                                              dict(index=1, unique_id=None)]),
    'showuniqueid-rocm3.3-2x-radeon-vii-old-header.txt': ('text', None, [
        dict(index=1, card='card1', unique_id='0x592c190172fd5d40'),
        dict(index=2, card='card2', unique_id='0xc6f220c172dc76bb')]),
    'showmeminfo-vram-rocm5.4-4gb-gpu.txt': ('text', None, [
        dict(vram_total_bytes=4278190080, vram_used_bytes=108814336)]),
    'showtopo-4x-mi50-rocm7.2.1.txt': ('text', None, [dict(index=number, numa_node=0) for number in range(4)]),
    'default-rocm1.9-two-gpu-igpu-n-a.txt': ('table', None, [dict(
        index=1, temperature_c=55.0, power_w=15.0, sclk_mhz=852.0, mclk_mhz=167.0, fan_percent=10.98,
        perf_level='auto')]),
    'default-rocm1.9-vega-m-gh-hades-canyon.txt': ('table', None, [dict(
        index=1, temperature_c=58.0, power_w=None, sclk_mhz=1190.0, mclk_mhz=800.0, fan_percent=0.0)]),
    'default-rocm3.3-vega10-xt-nospace-header.txt': ('table', None, [dict(
        index=1, temperature_c=25.0, power_w=10.0, sclk_mhz=852.0, mclk_mhz=167.0, fan_percent=14.9,
        power_cap_w=170.0, vram_use_percent=None, use_percent=0.0)]),
    'default-rocm5.0-no-gpus-warning.txt': ('table', None, []),
    'default-rocm5.7-4x-mi100-concise.txt': ('table', None, [
        dict(index=0, temperature_c=37.0, power_w=38.0, sclk_mhz=300.0, mclk_mhz=1200.0, power_cap_w=290.0,
             vram_use_percent=0.0, use_percent=0.0),
        dict(index=1, temperature_c=40.0, power_w=39.0),
        dict(index=2, temperature_c=41.0, power_w=42.0),
        dict(index=3, temperature_c=39.0, power_w=35.0)]),
    'default-rocm6.0-4x-mi300x-two-row-per-gpu.txt': ('table', None, [
        dict(index=0, device_id='0x74a1', device_rev='0x00', product_name='AMD Instinct MI300X',
             temperatures_c={'junction': 35.0}, power_w=133.0, partitions='NPS1, SPX', sclk_mhz=131.0,
             mclk_mhz=900.0, power_cap_w=750.0, gfx_target='gfx942'),
        dict(index=1, temperature_c=37.0, power_w=131.0, sclk_mhz=132.0),
        dict(index=2, temperature_c=34.0, power_w=131.0, sclk_mhz=132.0),
        dict(index=3, temperature_c=38.0, power_w=137.0, sclk_mhz=131.0, product_name='AMD Instinct MI300X')]),
    'default-rocm6.3-2gpu-7900xtx-7800xt-monitor-warnings.txt': ('table', None, [
        dict(index=0, node_id=1, device_id='0x744c', guid=47413, temperatures_c={'edge': 28.0}, power_w=13.0,
             partitions=None, sclk_mhz=10.0, mclk_mhz=96.0, perf_level='auto', power_cap_w=303.0,
             vram_use_percent=1.0, use_percent=0.0, gfx_target='gfx1100'),
        dict(index=1, node_id=2, device_id='0x747e', guid=55553, temperature_c=None, power_w=None, sclk_mhz=None,
             mclk_mhz=None, perf_level=None, power_cap_w=None, vram_use_percent=1.0, gfx_target='gfx1101')]),
    'default-rocm6.3.1-fedora-rx6800m-plus-igpu-map-at-exception.txt': ('table', None, [
        dict(index=0, device_id='0x73df', guid=45052, temperature_c=46.0, power_w=7.0, sclk_mhz=0.0, mclk_mhz=96.0,
             power_cap_w=130.0, gfx_target='gfx1031'),
        dict(index=1, device_id='0x1638', guid=54183, temperature_c=54.0, power_w=29.0, sclk_mhz=None,
             mclk_mhz=1600.0, power_cap_w=None, vram_use_percent=95.0, use_percent=1.0, gfx_target='gfx90c')]),
    'default-rocm6.3.3-2x-mi210.txt': ('table', None, [
        dict(index=0, node_id=2, device_id='0x740f', guid=22303, temperature_c=42.0, power_w=39.0, sclk_mhz=800.0,
             mclk_mhz=1600.0, power_cap_w=300.0, vram_use_percent=32.0, gfx_target='gfx90a'),
        dict(index=1, node_id=3, device_id='0x740f', guid=31706, temperature_c=30.0, power_w=40.0,
             vram_use_percent=0.0)]),
    'default-rocm7-rx7600.txt': ('table', None, [dict(
        index=0, node_id=1, device_id='0x7480', guid=26825, temperature_c=39.0, power_w=3.0, sclk_mhz=127.0,
        mclk_mhz=96.0, power_cap_w=145.0, vram_use_percent=7.0, use_percent=0.0, gfx_target='gfx1102')]),
}

NO_GPU = {
    'fail-driver-not-initialized-azure-mi25.txt': 'driver_not_loaded',
    'fail-wsl2-no-initstate-driver-not-initialized-rocm6.3.txt': 'driver_not_loaded',
    'debian12-rocm-smi5.2.3-json-flags-no-gpu-stderr.txt': 'driver_not_loaded',
    'json-a-no-gpus-warning-driver-6.3.6.txt': 'no_gpu',
    'default-rocm5.0-no-gpus-warning.txt': 'no_gpu',
}


def test_every_capture_is_covered():
    assert set(CASES) | set(NO_GPU) == set(fixture_names('rocm-smi'))


@pytest.mark.parametrize('name', sorted(CASES))
def test_capture(name):
    form, driver, gpus = CASES[name]
    facts = parse_rocm_smi(fixture('rocm-smi/' + name))
    assert facts['form'] == form
    assert facts['driver_version'] == driver
    assert facts['gpu_count'] == len(gpus) == len(facts['gpus'])
    for found, expected in zip(facts['gpus'], gpus):
        for key, value in expected.items():
            assert found[key] == value, key


@pytest.mark.parametrize('name', sorted(NO_GPU))
def test_no_gpu_outputs(name):
    facts = parse_rocm_smi(fixture('rocm-smi/' + name))
    assert (facts['gpu_count'], facts['gpus']) == (0, [])
    assert facts['error_kind'] == NO_GPU[name]
    assert 'amdgpu' in facts['error']


def test_warnings_printed_before_the_table_are_kept():
    facts = parse_rocm_smi(fixture('rocm-smi/default-rocm6.3-2gpu-7900xtx-7800xt-monitor-warnings.txt'))
    assert facts['warnings'] == ['Expected integer value from monitor, but got ""'] * 4
    facts = parse_rocm_smi(fixture('rocm-smi/default-rocm6.3.1-fedora-rx6800m-plus-igpu-map-at-exception.txt'))
    assert facts['warnings'] == ['Exception caught: map::at']
    facts = parse_rocm_smi(fixture('rocm-smi/default-rocm1.9-two-gpu-igpu-n-a.txt'))
    assert facts['warnings'] == ['skipped GPU 0: every value is N/A (not an AMD GPU)']


def test_reindented_and_one_line_json_read_the_same():
    text = fixture('rocm-smi/json-telegraf-flags-mi50-32gb-driver5.9.17-card0-only.json')
    one_line = json.dumps(json.loads(text))
    assert parse_rocm_smi(one_line)['gpus'] == parse_rocm_smi(text)['gpus']


def test_card_keys_out_of_order_are_sorted_by_index():
    card = json.loads(fixture('rocm-smi/json-showproductname-showuse-showmeminfo-vram-rx7900xt.json'))['card0']
    facts = parse_rocm_smi(json.dumps({'card10': card, 'card2': card}))
    assert [gpu['index'] for gpu in facts['gpus']] == [2, 10]


def test_json_flags_are_the_ones_rocm_smi_has():
    # Each flag appears in rocm_smi.py from ROCm 3.x on (Debian 12's 5.2.3 checked); vram is --showmeminfo's value;
    # --showfwinfo takes optional block names (none: every block), so an option must follow it.
    assert JSON_ARGS == ['--showid', '--showproductname', '--showuniqueid', '--showvbios', '--showmeminfo', 'vram',
                         '--showtemp', '--showpower', '--showmaxpower', '--showclocks', '--showuse', '--showbus',
                         '--showfwinfo', '--json']


@pytest.mark.parametrize('text, reason', [
    ('', 'not rocm-smi output'),
    ('usage: rocm-smi [-h] [-d DEVICE]\nrocm-smi: error: unrecognized arguments: --json\n', 'not rocm-smi output'),
    ('{"card0": {"GPU ID": "0x66a1", "Unique', 'cut short'),
    ('[1, 2]', 'JSON array: amd-smi prints those'),
    ('"card0"', 'not rocm-smi output'),
    ('{"foo": 1}', 'neither card0'),
    ('device,GPU use (%)\ncard0,1,2\n', 'CSV row has 3 fields'),
    ('device,GPU use (%)\ngpu0,1\n', 'does not start with cardN'),
])
def test_garbage_and_truncated_input_raise_parse_error(text, reason):
    with pytest.raises(ParseError, match=reason):
        parse_rocm_smi(text)


# --- hostile and damaged input (issue 15): facts or a ParseError with the reason, never another exception ------

MI50 = 'rocm-smi/json-telegraf-flags-mi50-32gb-driver5.9.17-card0-only.json'
DIGITS = '1' + '0' * 400  # float(DIGITS) is inf
HUGE = '1' + '0' * 5000  # over Python's 4300-digit limit for int(str)


def valid(facts):
    """The facts as Ansible sends them back: strict JSON (no NaN or Infinity), gpu_count matching gpus."""
    json.dumps(facts, allow_nan=False)
    assert facts['gpu_count'] == len(facts['gpus'])
    return facts


def mi50_with(**values):
    card = json.loads(fixture(MI50))['card0']
    card.update(values)
    return json.dumps({'card0': card})


@pytest.mark.parametrize('number', [DIGITS, DIGITS + '.0', DIGITS + '.5', HUGE])
def test_values_of_hundreds_of_digits_are_null_not_infinity(number):
    text = mi50_with(**{'Temperature (Sensor edge) (C)': number, 'Average Graphics Package Power (W)': number,
                        'VRAM Total Memory (B)': number, 'Fan speed (%)': number, 'Voltage (mV)': number,
                        'pcie clock level': '1 ({0}GT/s x{0})'.format(number), 'sclk clock speed:': '(%sMhz)' % number})
    gpu = valid(parse_rocm_smi(text))['gpus'][0]
    assert gpu['temperatures_c']['edge'] is None and gpu['temperature_c'] is None
    assert (gpu['power_w'], gpu['vram_total_bytes'], gpu['fan_percent'], gpu['voltage_mv']) == (None,) * 4
    assert (gpu['link_speed_gts'], gpu['link_width'], gpu['sclk_mhz']) == (None, None, None)
    assert gpu['temperatures_c']['junction'] == 38.0  # the rest is read as before


@pytest.mark.parametrize('number', [DIGITS, HUGE, 'NaN', 'Infinity', '-Infinity', '1e999'])
def test_json_numbers_out_of_range_are_null(number):
    gpu = valid(parse_rocm_smi('{"card0": {"GPU use (%%)": %s, "Device ID": %s}}' % (number, number)))['gpus'][0]
    assert (gpu['use_percent'], gpu['device_id']) == (None, None)


def test_values_of_hundreds_of_digits_in_the_other_forms_are_null():
    kv = 'GPU[0]\t\t: Temperature (Sensor edge) (C): {0}\nGPU[0]\t\t: Average Graphics Package Power (W): {0}\n'
    gpu = valid(parse_rocm_smi(kv.format(DIGITS)))['gpus'][0]
    assert (gpu['temperature_c'], gpu['power_w']) == (None, None)
    csv_text = 'device,Temperature (Sensor edge) (C),GPU use (%)\ncard0,{0},{0}\n'.format(DIGITS + '.0')
    gpu = valid(parse_rocm_smi(csv_text))['gpus'][0]
    assert (gpu['temperature_c'], gpu['use_percent']) == (None, None)
    table = fixture('rocm-smi/default-rocm7-rx7600.txt').replace('°C', '9' * 400 + '°C', 1)
    assert valid(parse_rocm_smi(table))['gpus'][0]['temperature_c'] is None


def test_a_pcie_level_that_is_no_number_is_null():
    gpu = valid(parse_rocm_smi(mi50_with(**{'pcie clock level': '1 (1.2.3.4GT/s x16)'})))['gpus'][0]
    assert (gpu['link_speed_gts'], gpu['link_width']) == (1.2, 16)


@pytest.mark.parametrize('text, where', [
    ('{"card%s": {"GPU use (%%)": "1"}}' % HUGE, 'JSON'),
    ('GPU[%s]\t\t: GPU use (%%): 5\n' % HUGE, 'text'),
    ('device,GPU use (%%)\ncard%s,1\n' % HUGE, 'CSV'),
])
def test_a_card_number_out_of_range_is_refused(text, where):
    with pytest.raises(ParseError, match='rocm-smi {0} has a card number out of range'.format(where)):
        parse_rocm_smi(text)


@pytest.mark.parametrize('text', [
    '{"card0": {"x": ' + '[' * 100000 + ']' * 100000 + '}}',
    '{"card0": ' + '{"a": ' * 5000 + '1' + '}' * 5000 + '}',
    '{"card0": {"x": ' + '[' * 40 + ']' * 40 + '}}',
])
def test_deeply_nested_json_is_refused(text):
    with pytest.raises(ParseError, match='nests more than 32 levels'):
        parse_rocm_smi(text)


def test_nested_json_values_within_the_limit_are_kept_as_text():
    gpu = valid(parse_rocm_smi(mi50_with(**{'VBIOS version': [[['113-D1631700-111']]]})))['gpus'][0]
    assert gpu['vbios'] == '[[["113-D1631700-111"]]]'


def test_a_csv_field_over_128_kib_is_refused():
    with pytest.raises(ParseError, match='CSV output is damaged.*field larger than field limit'):
        parse_rocm_smi('device,Card Series\ncard0,"' + 'x' * 200000 + '"\n')


@pytest.mark.parametrize('text', ['WARNING: x\n{"card0": {"GPU ID": 0x66a1}}', '{ this is not json }\n',
                                  '{"card0": {"GPU ID": "0x66a1"}\n"card1": {}}'])
def test_damaged_json_is_not_called_cut_short(text):
    with pytest.raises(ParseError, match='not valid JSON') as info:
        parse_rocm_smi(text)
    assert 'cut short' not in str(info.value)
