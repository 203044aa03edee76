# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The id table and gfx helpers, checked against docs/rocm-reference.md section 7 and the captured outputs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import gfx

# (device id, gfx target) pairs of reference section 7, every row.
SECTION_7 = [
    (0x6860, 'gfx900'), (0x687f, 'gfx900'), (0x6863, 'gfx900'),
    (0x66a1, 'gfx906'), (0x66af, 'gfx906'),
    (0x738c, 'gfx908'), (0x7388, 'gfx908'), (0x738e, 'gfx908'), (0x7390, 'gfx908'),
    (0x740f, 'gfx90a'), (0x7408, 'gfx90a'), (0x740c, 'gfx90a'), (0x7410, 'gfx90a'),
    (0x74a0, 'gfx942'), (0x74a1, 'gfx942'), (0x74a9, 'gfx942'), (0x74bd, 'gfx942'), (0x74a2, 'gfx942'),
    (0x74b6, 'gfx942'), (0x74a8, 'gfx942'), (0x74a5, 'gfx942'), (0x74b5, 'gfx942'), (0x74b9, 'gfx942'),
    (0x75a0, 'gfx950'), (0x75a3, 'gfx950'), (0x75b0, 'gfx950'), (0x75b3, 'gfx950'),
    (0x73bf, 'gfx1030'), (0x73af, 'gfx1030'), (0x73a5, 'gfx1030'), (0x73a3, 'gfx1030'), (0x73a1, 'gfx1030'),
    (0x73ae, 'gfx1030'),
    (0x73df, 'gfx1031'), (0x73ff, 'gfx1032'), (0x73ef, 'gfx1032'), (0x73e3, 'gfx1032'),
    (0x744c, 'gfx1100'), (0x7448, 'gfx1100'), (0x744a, 'gfx1100'), (0x745e, 'gfx1100'),
    (0x747e, 'gfx1101'), (0x7470, 'gfx1101'), (0x7480, 'gfx1102'), (0x7489, 'gfx1102'),
    (0x15bf, 'gfx1103'), (0x15c8, 'gfx1103'),
    (0x7590, 'gfx1200'), (0x7550, 'gfx1201'), (0x7551, 'gfx1201'),
]

# Ids the captured outputs print next to a gfx target (file: id, target).
FROM_FIXTURES = [
    (0x67df, 'gfx803'),   # rocminfo gfx803-rx470: Chip ID 26591, Name gfx803
    (0x6981, 'gfx803'),   # rocminfo gfx803-radeon-pro-wx3200: Chip ID 27009(0x6981)
    (0x164e, 'gfx1036'),  # rocminfo gfx908-mi100-plus-gfx1036-igpu: Chip ID 5710(0x164e); rocm-smi csv: gfx1036
    (0x1638, 'gfx90c'),   # rocm-smi default-rocm6.3.1-fedora: 0x1638 Cezanne (gfx90c in SOURCES.md)
    (0x1586, 'gfx1151'),  # amd-smi static-json-strix-halo: device_id 0x1586, target_graphics_version gfx1151
]


@pytest.mark.parametrize('device_id, target', SECTION_7 + FROM_FIXTURES)
def test_every_known_id_maps_to_its_gfx_target(device_id, target):
    info = gfx.lookup(gfx.VENDOR_AMD, device_id)
    assert info['gfx_target'] == target
    assert info['name']
    assert gfx.lookup('0x1002', '0x{0:04x}'.format(device_id))['gfx_target'] == target


@pytest.mark.parametrize('device_id', [0x7410, 0x74b5, 0x74b9, 0x75b0, 0x75b3, 0x73ae])
def test_virtual_functions_are_marked(device_id):
    assert gfx.lookup(gfx.VENDOR_AMD, device_id)['vf'] is True


@pytest.mark.parametrize('device_id, target, family', [
    (0x687e, 'gfx900', 'Vega 10'), (0x66a3, 'gfx906', 'Vega 20'), (0x73a2, 'gfx1030', 'Navi 21'),
    (0x73c3, 'gfx1031', 'Navi 22'), (0x73e1, 'gfx1032', 'Navi 23'), (0x743f, 'gfx1034', 'Navi 24'),
])
def test_ids_in_enumerator_ranges_give_target_but_no_name(device_id, target, family):
    info = gfx.lookup(gfx.VENDOR_AMD, device_id)
    assert (info['name'], info['gfx_target'], info['family']) == (None, target, family)


@pytest.mark.parametrize('vendor, device', [(0x1002, 0x1234), (0x1002, None), (0x8086, 0x56a0), (None, 0x740f),
                                            ('junk', 'zz'), (0x10de, 0x1eb8)])
def test_unknown_ids_give_nulls_never_an_error(vendor, device):
    assert gfx.lookup(vendor, device) == {'name': None, 'gfx_target': None, 'family': None, 'vf': None}


@pytest.mark.parametrize('device_id, name', [(0x2335, 'NVIDIA H200'), (0x2330, 'NVIDIA H100 SXM5 80GB'),
                                             (0x2331, 'NVIDIA H100 PCIe'), (0x20b0, 'NVIDIA A100 SXM4 40GB'),
                                             (0x20b2, 'NVIDIA A100 SXM4 80GB'), (0x20f1, 'NVIDIA A100 PCIe 40GB')])
def test_nvidia_names(device_id, name):
    info = gfx.lookup(gfx.VENDOR_NVIDIA, device_id)
    assert info['name'] == name and info['gfx_target'] is None


@pytest.mark.parametrize('version, target', [
    (90010, 'gfx90a'), (90402, 'gfx942'), (100300, 'gfx1030'), (110000, 'gfx1100'), (90000, 'gfx900'),
    (90006, 'gfx906'), (90008, 'gfx908'), (100301, 'gfx1031'), (100302, 'gfx1032'), (100304, 'gfx1034'),
    (110003, 'gfx1103'), (110002, 'gfx1102'), (110001, 'gfx1101'), (90012, 'gfx90c'), (110501, 'gfx1151'),
    (120001, 'gfx1201'), ('90010', 'gfx90a'),
])
def test_gfx_target_version_decodes(version, target):
    assert gfx.decode_gfx_target_version(version) == target


@pytest.mark.parametrize('version', [0, None, -1, 'x', 91600, 90016, True])
def test_gfx_target_version_without_a_target(version):
    assert gfx.decode_gfx_target_version(version) is None


@pytest.mark.parametrize('target, override', [
    ('gfx1031', '10.3.0'), ('gfx1032', '10.3.0'), ('gfx1034', '10.3.0'), ('gfx1035', '10.3.0'), ('gfx1036', '10.3.0'),
    ('gfx1101', '11.0.0'), ('gfx1102', '11.0.0'), ('gfx1103', '11.0.0'), ('GFX1102', '11.0.0'),
    ('gfx1031:xnack-', '10.3.0'),
    ('gfx1030', None), ('gfx1100', None), ('gfx90a', None), ('gfx942', None), ('gfx906', None), ('gfx1201', None),
    ('', None), (None, None), (1031, None),
])
def test_hsa_override_only_where_libraries_lack_kernels(target, override):
    assert gfx.hsa_override_for(target) == override


@pytest.mark.parametrize('printed, canonical', [
    ('gfx11003', 'gfx1103'),  # rocm-smi -a on a Phoenix APU (fixture showallinfo-a-phoenix1-780m)
    ('gfx9010', 'gfx90a'),    # fixtures NOTES.md
    ('gfx1030', 'gfx1030'), ('gfx90a', 'gfx90a'), ('gfx942', 'gfx942'), ('gfx1151', 'gfx1151'), ('gfx803', 'gfx803'),
    ('N/A', None), ('gfx', None), ('gfx12', None), (None, None),
])
def test_normalize_gfx_name(printed, canonical):
    assert gfx.normalize_gfx_name(printed) == canonical


def test_parse_isa_name_keeps_target_features():
    isa = gfx.parse_isa_name('amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-')
    assert isa == {'name': 'amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-', 'target_id': 'gfx942:sramecc+:xnack-',
                   'processor': 'gfx942', 'features': ['sramecc+', 'xnack-'], 'generic': False}
    assert gfx.parse_isa_name('amdgcn-amd-amdhsa--gfx11-generic')['generic'] is True


@pytest.mark.parametrize("value, ok", [
    ("gfx90a", True), ("gfx1100", True), ("gfx942", True), ("gfx90", False), ("gfx90a:xnack-", False),
    ("GFX90A", False), ("gfx90a\n", False), (" gfx90a", False), ("gfx11000", False), (90, False), (None, False)])
def test_is_gfx_target_is_the_one_pattern_of_the_roles_variables(value, ok):
    assert gfx.is_gfx_target(value) is ok
