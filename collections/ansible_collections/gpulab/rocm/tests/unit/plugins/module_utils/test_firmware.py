# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""parsers/firmware.py over real captures (fixtures/firmware/, amd-smi/, rocm-smi/; SOURCES.md): debugfs'
amdgpu_firmware_info of five kernels, amd-smi's and rocm-smi's firmware lists, one normalized shape; the sysfs and
debugfs readers over trees laid out from those captures."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import firmware as fw
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import ParseError
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.amd_smi import parse_amd_smi
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.pci import gather_pci
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.rocm_smi import parse_rocm_smi
from ansible_collections.gpulab.rocm.tests.unit.gpu_facts_helpers import fixture, fixture_names
from ansible_collections.gpulab.rocm.tests.unit.sysfs_tree import add_function

R9700_FIRST = 'firmware/debugfs-amdgpu_firmware_info-2x-r9700-plus-raphael-igpu-kernel6.17-issue6155-first-host.txt'
R9700_SECOND = 'firmware/debugfs-amdgpu_firmware_info-3x-r9700-kernel6.17-one-vbios-each-issue6155-second-host.txt'
STRIX = 'firmware/debugfs-amdgpu_firmware_info-strix-halo-gfx1151-kernel7.0-issue6165.txt'
VEGA10 = 'firmware/debugfs-amdgpu_firmware_info-vega10-mi25-rocm1.9-k8s-device-plugin-testdata.txt'
POPOS = 'firmware/debugfs-amdgpu_firmware_info-popos21.10-ta-version-in-feature-field-cut.txt'

# The second host's three R9700s (issue 6155, comment 8) share every block and differ in the VBIOS only.
R9700_NEW = {
    'me': '0x00000b72', 'pfp': '0x00000bc2', 'rlc': '0x00be7da0', 'mec': '0x00000cb2', 'imu': '0x0c302b00',
    'sos': '0x003a1014', 'asd': '0x21000109', 'ta_ras': '0x1b3a0001', 'ta_hdcp': '0x1700004d', 'ta_dtm': '0x1200001d',
    'smc': '0x00684c00', 'sdma0': '0x00798e96', 'sdma1': '0x00798e96', 'vcn': '0x0910c011', 'dmcub': '0x0a000800',
    'mes_kiq': '0x0000008b', 'mes': '0x0000008b'}


def blocks_of(text):
    """The amdgpu_firmware_info outputs a paste holds one after another (each ends with its VBIOS line), without
    the poster's headers between them."""
    parts = re.split(r'(?<=\n)(?=VCE feature version)', text)
    return [part for part in parts if 'feature version' in part]


def test_every_firmware_capture_is_covered():
    assert fixture_names('firmware') == sorted(
        os.path.basename(name) for name in (R9700_FIRST, R9700_SECOND, STRIX, VEGA10, POPOS))


def test_the_r9700s_of_the_second_host_differ_in_their_vbios_only():
    parsed = [fw.parse_debugfs(block) for block in blocks_of(fixture(R9700_SECOND))]
    assert [item['vbios'] for item in parsed] == ['113-48WD6SHD1-P02', '113-APM107573-101', '113-R9700AT-F40']
    assert all(item['firmware'] == R9700_NEW for item in parsed)


def test_the_first_host_two_r9700s_on_older_firmware_and_an_igpu():
    first, second, igpu = [fw.parse_debugfs(block) for block in blocks_of(fixture(R9700_FIRST))]
    assert first == second and first['vbios'] == '113-APM107573-101'
    # MES 0x81 (the subject), SMC 104.74.0: older than the second host's 0x8b and 104.76.0.
    assert (first['firmware']['mes'], first['firmware']['smc'], first['firmware']['sos']) == (
        '0x00000081', '0x00684a00', '0x003a0f14')
    assert 'dmcub' not in first['firmware']  # 0x00000000: nothing loaded
    assert igpu['vbios'] == '102-RAPHAEL-008'
    assert (igpu['firmware']['mec2'], igpu['firmware']['rlc_srlc'], igpu['firmware']['toc']) == (
        '0x00000014', '0x00000001', '0x00000007')
    assert 'mes' not in igpu['firmware'] and 'sos' not in igpu['firmware']


def test_strix_halo_kernel_7_with_the_smc_program_form():
    parsed = fw.parse_debugfs(fixture(STRIX))
    # "SMC feature version: 0, program: 10, firmware version: 0x0a640600 (100.6.0)": the program byte is kept.
    assert parsed['firmware']['smc'] == '0x0a640600'
    assert (parsed['firmware']['vpe'], parsed['firmware']['mes_kiq'], parsed['vbios']) == (
        '0x00000017', '0x0000006f', '113-STRXLGEN-001')
    assert sorted(parsed['firmware']) == ['asd', 'dmcub', 'imu', 'me', 'mec', 'mes', 'mes_kiq', 'pfp', 'rlc', 'rlcp',
                                          'sdma0', 'smc', 'ta_dtm', 'ta_hdcp', 'toc', 'vcn', 'vpe']


def test_a_2018_kernel_without_ta_or_vbios_lines():
    parsed = fw.parse_debugfs(fixture(VEGA10))
    assert parsed == {'vbios': None, 'firmware': {
        'vce': '0x352d0400', 'uvd': '0x01571100', 'me': '0x00000094', 'pfp': '0x000000a4', 'ce': '0x0000004a',
        'rlc': '0x00000058', 'mec': '0x00000160', 'mec2': '0x00000160', 'sos': '0x00161a92', 'asd': '0x0016129a',
        'smc': '0x001c2800', 'sdma0': '0x00000197', 'sdma1': '0x00000197'}}


def test_a_kernel_that_printed_the_ta_version_in_the_feature_field():
    # Pop!_OS 21.10's kernel: "TA HDCP feature version: 0x1700001f, firmware version: 0x00000000".
    parsed = fw.parse_debugfs(fixture(POPOS))
    assert (parsed['firmware']['ta_hdcp'], parsed['firmware']['ta_dtm'], parsed['firmware']['ta_rap']) == (
        '0x1700001f', '0x12000009', '0x0700000e')
    assert 'ta_ras' not in parsed['firmware'] and parsed['firmware']['smc'] == '0x00412a00'


@pytest.mark.parametrize('text', ['', 'VBIOS version: 113-D65201-046\n', 'garbage\n'])
def test_text_with_no_block_line_is_refused(text):
    with pytest.raises(ParseError, match='not amdgpu_firmware_info'):
        fw.parse_debugfs(text)


def test_the_same_firmware_compares_equal_whatever_the_tool_printed():
    # VCN of MI300X/MI300A: rocm-smi 0x0611300c (hex), amd-smi 24.7 "06.11.30.0C", amd-smi of the blog "61.13.00.C"
    # (its hex digits in pairs without the leading zero): one version. TA XGMI 20.00.01.13 (amd-smi, hex pairs) and
    # 32.00.01.19 (rocm-smi, decimal bytes) of two MI300X hosts: the same number.
    rocm = parse_rocm_smi(fixture('rocm-smi/showallinfo-a-4x-mi300x-vf-sriov-driver6.7.0.txt'))['gpus'][0]['firmware']
    mi300a = parse_amd_smi(fixture('amd-smi/firmware-text-4x-mi300a-amdsmi24.7.1-rocm6.3.3.txt'))['gpus'][0]
    blog = parse_amd_smi(fixture('amd-smi/firmware-text-mi300x-rocm6.2-blog-gpu0-only-cut.txt'))['gpus'][0]
    assert rocm['vcn'] == mi300a['firmware']['vcn'] == blog['firmware']['vcn'] == '0x0611300c'
    assert rocm['ta_xgmi'] == blog['firmware']['ta_xgmi'] == mi300a['firmware']['ta_xgmi'] == '0x20000113'


@pytest.mark.parametrize('source, block, value, version', [
    ('amd-smi', 'smc', '85.110.0', '0x00556e00'), ('amd-smi', 'smc', '00.104.74.00', '0x00684a00'),
    ('amd-smi', 'asd', '553648393', '0x21000109'), ('amd-smi', 'mec', 147, '0x00000093'),
    ('amd-smi', 'psp_bl', '0.a1.2.1e', '0.a1.2.1e'),  # a form the parser does not know: kept as printed
    ('rocm-smi', 'smc', '00.85.91.00', '0x00555b00'), ('rocm-smi', 'ta_ras', '32.00.00.12', '0x2000000c'),
    ('rocm-smi', 'mec', '138', '0x0000008a'), ('sysfs', 'mec', '0x00000cb2', '0x00000cb2'),
    ('rocm-smi', 'sos', '0x00000000', None), ('amd-smi', 'vcn', 'N/A', None), ('amd-smi', 'vcn', 0, None),
    ('amd-smi', 'vcn', True, None), ('amd-smi', 'vcn', 'x' * 65, None),
])
def test_versions(source, block, value, version):
    assert fw.normalize_version(source, block, value) == version


@pytest.mark.parametrize('source, name, block', [
    ('amd-smi', 'CP_MEC1', 'mec'), ('amd-smi', 'PSP_SOSDRV', 'sos'), ('amd-smi', 'PM', 'smc'),
    ('amd-smi', 'SDMA2', 'sdma2'), ('amd-smi', 'RLC_RESTORE_LIST_CNTL', 'rlc_srlc'),
    ('rocm-smi', 'SDMA2', 'sdma1'), ('rocm-smi', 'MES KIQ', 'mes_kiq'),
    ('debugfs', 'TA SECUREDISPLAY', 'ta_securedisplay'),
    ('sysfs', 'sdma', 'sdma0'), ('debugfs', '../x', None),
])
def test_block_ids(source, name, block):
    assert fw.normalize_id(source, name) == block


# --- the readers over trees laid out from the captures -----------------------------------------------------------

def r9700_tree(tmp_path, debugfs_named_by='address'):
    """The second host's three R9700s: PCI functions (sysfs_tree), each with its fw_version/ files and
    vbios_version, and debugfs' dri/<folder>/amdgpu_firmware_info. TEST FIXTURE layout: the fw_version values are
    the capture's debugfs versions in the form amdgpu_ucode.c's FW_VERSION_ATTR prints ("0x%08x\\n"); no capture of
    the fw_version folder was found. dri/<minor>/name is "amdgpu dev=<address> unique=<address>" as the DRM core
    writes it (drm_debugfs.c, drm_name_info)."""
    sysfs = str(tmp_path / 'sys')
    blocks = blocks_of(fixture(R9700_SECOND))
    names = {'mes_kiq': 'mes_kiq', 'sdma0': 'sdma', 'sdma1': 'sdma2'}
    for number, (bdf, text) in enumerate(zip(('0000:0a:00.0', '0000:0d:00.0', '0000:45:00.0'), blocks)):
        parsed = fw.parse_debugfs(text)
        files = dict(('fw_version/%s_fw_version' % names.get(block, block), version)
                     for block, version in parsed['firmware'].items())
        files['fw_version/dmcu_fw_version'] = '0x00000000'
        files['vbios_version'] = parsed['vbios']
        device_dir = add_function(sysfs, ['pci0000:00', '0000:00:01.%d' % number, bdf], cls='0x030000',
                                  vendor='0x1002', device='0x7551', driver='amdgpu', drm=['card%d' % (number + 1)])
        os.makedirs(os.path.join(device_dir, 'fw_version'))
        for name, value in files.items():
            with open(os.path.join(device_dir, name), 'w') as handle:
                handle.write(value + '\n')
        folder = bdf if debugfs_named_by == 'address' else str(number + 1)
        dri = os.path.join(sysfs, 'kernel', 'debug', 'dri', folder)
        os.makedirs(dri)
        with open(os.path.join(dri, 'amdgpu_firmware_info'), 'w') as handle:
            handle.write(text)
        with open(os.path.join(dri, 'name'), 'w') as handle:
            handle.write('amdgpu dev=%s unique=%s\n' % (bdf, bdf))
    return sysfs


@pytest.mark.parametrize('named_by', ['address', 'minor'])
def test_the_readers_over_the_r9700_tree(tmp_path, named_by):
    sysfs = r9700_tree(tmp_path, named_by)
    pci = fw.add_to_pci(gather_pci(sysfs, str(tmp_path), str(tmp_path)), sysfs)
    devices = pci['amd']
    assert [device['vbios_version'] for device in devices] == ['113-48WD6SHD1-P02', '113-APM107573-101',
                                                               '113-R9700AT-F40']
    for device in devices:
        assert device['firmware'] == R9700_NEW  # dmcu at 0: left out
        assert device['firmware_debugfs']['firmware'] == R9700_NEW
    records = fw.inventory(gpu_pci=pci)
    assert [(item['pci_bdf'], item['source'], item['vbios']) for item in records] == [
        ('0000:0a:00.0', 'debugfs', '113-48WD6SHD1-P02'), ('0000:0d:00.0', 'debugfs', '113-APM107573-101'),
        ('0000:45:00.0', 'debugfs', '113-R9700AT-F40')]


def test_without_debugfs_sysfs_is_the_source(tmp_path):
    sysfs = r9700_tree(tmp_path)
    os.rename(os.path.join(sysfs, 'kernel'), os.path.join(str(tmp_path), 'not-mounted'))
    pci = fw.add_to_pci(gather_pci(sysfs, str(tmp_path), str(tmp_path)), sysfs)
    assert all(device['firmware_debugfs'] is None for device in pci['amd'])
    record = fw.inventory(gpu_pci=pci)[0]
    assert (record['source'], record['firmware'], record['vbios']) == ('sysfs', R9700_NEW, '113-48WD6SHD1-P02')


def test_a_link_in_debugfs_is_not_followed(tmp_path):
    sysfs = r9700_tree(tmp_path)
    dri = os.path.join(sysfs, 'kernel', 'debug', 'dri')
    os.rename(os.path.join(dri, '0000:0a:00.0'), os.path.join(str(tmp_path), 'elsewhere'))
    os.symlink(os.path.join(str(tmp_path), 'elsewhere'), os.path.join(dri, '0000:0a:00.0'))
    assert fw.read_debugfs('0000:0a:00.0', os.path.join(sysfs, 'kernel', 'debug')) is None
    assert fw.read_debugfs('0000:0d:00.0', os.path.join(sysfs, 'kernel', 'debug'))['vbios'] == '113-APM107573-101'


def test_inventory_prefers_amd_smi_then_debugfs_then_rocm_smi():
    amd = parse_amd_smi(fixture('amd-smi/firmware-text-4x-mi300a-amdsmi24.7.1-rocm6.3.3.txt'))
    rocm = parse_rocm_smi(fixture('rocm-smi/showallinfo-a-4x-mi300x-vf-sriov-driver6.7.0.txt'))
    # amd-smi's firmware output prints no address: its GPUs are their own records, by index; rocm-smi's, with
    # addresses, are records of their own too (different hosts' captures: nothing joins them).
    records = fw.inventory(amd, rocm)
    assert [(item['index'], item['pci_bdf'], item['source']) for item in records] == [
        (0, None, 'amd-smi'), (1, None, 'amd-smi'), (2, None, 'amd-smi'), (3, None, 'amd-smi'),
        (0, '0000:26:00.0', 'rocm-smi'), (1, '0000:46:00.0', 'rocm-smi'), (2, '0000:65:00.0', 'rocm-smi'),
        (3, '0000:85:00.0', 'rocm-smi')]
    assert records[4]['vbios'] == '113-MI3SRIOV-001' and records[0]['vbios'] is None
    # One GPU seen by amd-smi (static --ifwi: part number, IFWI, boot firmware) and rocm-smi (firmware list).
    static = parse_amd_smi(fixture('amd-smi/static-ifwi-boot-firmware-amdsmi27.1-dev-name-redacted.txt'))['gpus'][0]
    one = fw.merged(static, rocm['gpus'][0])
    assert (one['vbios'], one['ifwi'], one['boot_firmware'], one['source']) == (
        '113-D7190300-104', '00106507', '022.002.001.027.000001', 'rocm-smi')
