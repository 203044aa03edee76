# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""GPU identification: PCI device id -> (product name, gfx target), and gfx target helpers.

Pure data and functions, no Ansible imports, so that modules, filter plugins and tests can all use them.

Sources: docs/rocm-reference.md section 7 (AMD device ids and gfx targets, from libdrm's amdgpu.ids,
ROCm/gpu-operator and rocm_agent_enumerator), plus ids that the captured outputs in
tests/unit/plugins/module_utils/fixtures show next to a gfx target (noted per row). Unknown ids give
name None; they are never an error.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

VENDOR_AMD = 0x1002
VENDOR_NVIDIA = 0x10de
VENDOR_NAMES = {VENDOR_AMD: 'AMD', VENDOR_NVIDIA: 'NVIDIA'}

# device id: (product name, gfx target, family, SR-IOV virtual function)
AMD_DEVICES = {
    # Vega 10 (GCN5), gfx900
    0x6860: ('AMD Radeon Instinct MI25 / Radeon Pro V340', 'gfx900', 'Vega 10', False),
    0x6861: ('AMD Radeon Pro WX 9100', 'gfx900', 'Vega 10', False),  # fixture json-telegraf-flags-vega10-xt
    0x6863: ('AMD Radeon Vega Frontier Edition', 'gfx900', 'Vega 10', False),
    0x687f: ('AMD Radeon RX Vega 56/64', 'gfx900', 'Vega 10', False),
    # Vega 20, gfx906
    0x66a1: ('AMD Instinct MI50 / MI60 / Radeon Pro VII', 'gfx906', 'Vega 20', False),
    0x66af: ('AMD Radeon VII', 'gfx906', 'Vega 20', False),
    # Arcturus (CDNA1), gfx908
    0x738c: ('AMD Instinct MI100', 'gfx908', 'Arcturus', False),
    0x7388: ('AMD Instinct MI100', 'gfx908', 'Arcturus', False),
    0x738e: ('AMD Instinct MI100', 'gfx908', 'Arcturus', False),
    0x7390: ('AMD Instinct MI100', 'gfx908', 'Arcturus', False),
    # Aldebaran (CDNA2), gfx90a
    0x740f: ('AMD Instinct MI210', 'gfx90a', 'Aldebaran', False),
    0x7408: ('AMD Instinct MI250X', 'gfx90a', 'Aldebaran', False),
    0x740c: ('AMD Instinct MI250X / MI250', 'gfx90a', 'Aldebaran', False),
    0x7410: ('AMD Instinct MI210 VF', 'gfx90a', 'Aldebaran', True),
    # Aqua Vanjaram (CDNA3), gfx942
    0x74a0: ('AMD Instinct MI300A', 'gfx942', 'Aqua Vanjaram', False),
    0x74a1: ('AMD Instinct MI300X', 'gfx942', 'Aqua Vanjaram', False),
    0x74a9: ('AMD Instinct MI300X HF', 'gfx942', 'Aqua Vanjaram', False),
    0x74bd: ('AMD Instinct MI300X HF', 'gfx942', 'Aqua Vanjaram', False),
    0x74a2: ('AMD Instinct MI308X', 'gfx942', 'Aqua Vanjaram', False),
    0x74b6: ('AMD Instinct MI308X', 'gfx942', 'Aqua Vanjaram', False),
    0x74a8: ('AMD Instinct MI308X HF', 'gfx942', 'Aqua Vanjaram', False),
    0x74a5: ('AMD Instinct MI325X', 'gfx942', 'Aqua Vanjaram', False),
    0x74b5: ('AMD Instinct MI300X VF', 'gfx942', 'Aqua Vanjaram', True),
    0x74b9: ('AMD Instinct MI325X VF', 'gfx942', 'Aqua Vanjaram', True),
    # CDNA4, gfx950
    0x75a0: ('AMD Instinct MI350X', 'gfx950', 'CDNA4', False),
    0x75a3: ('AMD Instinct MI355X', 'gfx950', 'CDNA4', False),
    0x75b0: ('AMD Instinct MI350X VF', 'gfx950', 'CDNA4', True),
    0x75b3: ('AMD Instinct MI355X VF', 'gfx950', 'CDNA4', True),
    # Polaris (GCN4), gfx803: ids shown next to gfx803 by the rocminfo fixtures (Chip ID 26591, 27009)
    0x67df: ('AMD Radeon RX 470/480/570/580', 'gfx803', 'Ellesmere', False),
    0x6981: ('AMD Radeon Pro WX 3200', 'gfx803', 'Lexa', False),
    # Navi 21 (RDNA2), gfx1030
    0x73bf: ('AMD Radeon RX 6800 / 6800 XT / 6900 XT', 'gfx1030', 'Navi 21', False),
    0x73af: ('AMD Radeon RX 6900 XT', 'gfx1030', 'Navi 21', False),
    0x73a5: ('AMD Radeon RX 6950 XT', 'gfx1030', 'Navi 21', False),
    0x73a3: ('AMD Radeon PRO W6800', 'gfx1030', 'Navi 21', False),
    0x73a1: ('AMD Radeon PRO V620', 'gfx1030', 'Navi 21', False),
    0x73ae: ('AMD Radeon PRO V620 MxGPU', 'gfx1030', 'Navi 21', True),
    # Navi 22 / 23, gfx1031 / gfx1032
    0x73df: ('AMD Radeon RX 6700 / 6700 XT / 6750 XT / 6800M', 'gfx1031', 'Navi 22', False),
    0x73ff: ('AMD Radeon RX 6600 / 6600 XT', 'gfx1032', 'Navi 23', False),
    0x73ef: ('AMD Radeon RX 6650 XT', 'gfx1032', 'Navi 23', False),
    0x73e3: ('AMD Radeon PRO W6600', 'gfx1032', 'Navi 23', False),
    # RDNA2 APUs: ids the rocminfo / rocm-smi fixtures show with their gfx target
    0x164e: ('AMD Radeon Graphics (Raphael)', 'gfx1036', 'Raphael', False),
    0x1638: ('AMD Radeon Graphics (Cezanne)', 'gfx90c', 'Cezanne', False),
    # Navi 31 / 32 / 33 (RDNA3)
    0x744c: ('AMD Radeon RX 7900 XTX / 7900 XT / 7900 GRE', 'gfx1100', 'Navi 31', False),
    0x7448: ('AMD Radeon PRO W7900', 'gfx1100', 'Navi 31', False),
    0x744a: ('AMD Radeon PRO W7900 Dual Slot', 'gfx1100', 'Navi 31', False),
    0x745e: ('AMD Radeon PRO W7800', 'gfx1100', 'Navi 31', False),
    0x747e: ('AMD Radeon RX 7800 XT / 7700 XT', 'gfx1101', 'Navi 32', False),
    0x7470: ('AMD Radeon PRO W7700', 'gfx1101', 'Navi 32', False),
    0x7480: ('AMD Radeon RX 7600 / 7600 XT / 7650 GRE / PRO W7600', 'gfx1102', 'Navi 33', False),
    0x7489: ('AMD Radeon PRO W7500', 'gfx1102', 'Navi 33', False),
    # RDNA3 APUs
    0x15bf: ('AMD Radeon 780M / 760M (Phoenix)', 'gfx1103', 'Phoenix', False),
    0x15c8: ('AMD Radeon 740M (Phoenix)', 'gfx1103', 'Phoenix', False),
    0x1586: ('AMD Radeon 8060S / 8050S (Strix Halo)', 'gfx1151', 'Strix Halo', False),  # amd-smi fixture
    # Navi 44 / 48 (RDNA4)
    0x7590: ('AMD Radeon RX 9060 XT / 9060', 'gfx1200', 'Navi 44', False),
    0x7550: ('AMD Radeon RX 9070 XT / 9070 / 9070 GRE', 'gfx1201', 'Navi 48', False),
    0x7551: ('AMD Radeon AI PRO R9700', 'gfx1201', 'Navi 48', False),
}

# Id ranges that rocm_agent_enumerator maps to one target (reference section 7): they give the gfx target and
# family for ids missing above, but no product name.
AMD_RANGES = (
    (0x6860, 0x687f, 'gfx900', 'Vega 10'),
    (0x66a0, 0x66af, 'gfx906', 'Vega 20'),
    (0x73a0, 0x73bf, 'gfx1030', 'Navi 21'),
    (0x73c0, 0x73df, 'gfx1031', 'Navi 22'),
    (0x73e0, 0x73ff, 'gfx1032', 'Navi 23'),
    (0x7420, 0x743f, 'gfx1034', 'Navi 24'),
)

# NVIDIA ids, for names only (the PCI facts list NVIDIA GPUs so that roles can handle CUDA coexistence).
NVIDIA_DEVICES = {
    0x2335: 'NVIDIA H200',
    0x2330: 'NVIDIA H100 SXM5 80GB',
    0x2331: 'NVIDIA H100 PCIe',
    0x20b0: 'NVIDIA A100 SXM4 40GB',
    0x20b2: 'NVIDIA A100 SXM4 80GB',
    0x20f1: 'NVIDIA A100 PCIe 40GB',
}

# HSA_OVERRIDE_GFX_VERSION values the community uses for GPUs the ROCm libraries lack kernels for
# (reference 6.3). Natively supported targets get None: never override those.
_HSA_OVERRIDES = {
    'gfx1031': '10.3.0', 'gfx1032': '10.3.0', 'gfx1034': '10.3.0', 'gfx1035': '10.3.0', 'gfx1036': '10.3.0',
    'gfx1101': '11.0.0', 'gfx1102': '11.0.0', 'gfx1103': '11.0.0',
}

# A gfx target as the roles' variables name one (gfx90a, gfx1100): the one pattern every role checks them with.
GFX_TARGET = re.compile(r'gfx[0-9a-f]{3,4}')


def is_gfx_target(value):
    """Whether value is a whole gfx target name such as gfx90a or gfx1100 (lower case, no features)."""
    return isinstance(value, str) and GFX_TARGET.fullmatch(value) is not None


def _as_int(device_id):
    if isinstance(device_id, bool):
        return None
    if isinstance(device_id, int):
        return device_id
    if isinstance(device_id, str):
        text = device_id.strip().lower()
        try:
            return int(text[2:], 16) if text.startswith('0x') else int(text, 16)
        except ValueError:
            return None
    return None


def lookup(vendor_id, device_id):
    """What the table knows about a PCI id: {name, gfx_target, family, vf}; every value None when unknown.

    Ids may be ints or hex strings ('0x740f', '740f').
    """
    vendor = _as_int(vendor_id)
    device = _as_int(device_id)
    info = {'name': None, 'gfx_target': None, 'family': None, 'vf': None}
    if device is None:
        return info
    if vendor == VENDOR_AMD:
        row = AMD_DEVICES.get(device)
        if row:
            info.update(name=row[0], gfx_target=row[1], family=row[2], vf=row[3])
            return info
        for low, high, gfx, family in AMD_RANGES:
            if low <= device <= high:
                info.update(gfx_target=gfx, family=family)
                break
    elif vendor == VENDOR_NVIDIA:
        info['name'] = NVIDIA_DEVICES.get(device)
    return info


def decode_gfx_target_version(value):
    """KFD gfx_target_version -> gfx name: major*10000 + minor*100 + stepping, minor and stepping in hex.

    90010 -> 'gfx90a', 90402 -> 'gfx942', 100300 -> 'gfx1030', 110000 -> 'gfx1100'. 0 (CPU nodes), None,
    negatives and values whose minor or stepping exceed one hex digit give None.
    """
    number = _as_decimal(value)
    if not number or number < 0:
        return None
    major, minor, stepping = number // 10000, (number // 100) % 100, number % 100
    if major == 0 or minor > 15 or stepping > 15:
        return None
    return 'gfx{0}{1:x}{2:x}'.format(major, minor, stepping)


def hsa_override_for(gfx_target):
    """HSA_OVERRIDE_GFX_VERSION for a consumer GPU the libraries lack kernels for, else None.

    '10.3.0' for gfx1031/1032/1034/1035/1036 (RDNA2 parts other than Navi 21), '11.0.0' for
    gfx1101/1102/1103 (RDNA3 parts other than Navi 31). Accepts target ids with features ('gfx1031:xnack-').
    """
    if not isinstance(gfx_target, str):
        return None
    return _HSA_OVERRIDES.get(gfx_target.strip().lower().split(':', 1)[0])


def normalize_gfx_name(value):
    """A gfx name as rocm-smi or amd-smi print it, made canonical; None when it is not one.

    rocm-smi 6.x prints some targets with decimal minor/stepping digits ('gfx11003' for gfx1103, 'gfx9010'
    for gfx90a, fixtures NOTES.md); these are re-encoded. Canonical names pass through.
    """
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    if not text.startswith('gfx'):
        return None
    digits = text[3:]
    if not re.match(r'^[0-9a-f]+$', digits):
        return None
    major_len = 2 if digits.startswith('1') else 1
    rest = digits[major_len:]
    if len(rest) == 2:
        return text
    # Bogus form: major, one decimal minor digit, two decimal stepping digits.
    if len(rest) == 3 and rest.isdigit():
        minor, stepping = int(rest[0]), int(rest[1:])
        if stepping <= 15:
            return 'gfx{0}{1:x}{2:x}'.format(int(digits[:major_len]), minor, stepping)
    return None


def parse_isa_name(isa_name):
    """'amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-' -> {target_id, processor, features, generic}.

    target_id keeps the target features ('gfx942:sramecc+:xnack-'); processor is the bare target.
    """
    if not isinstance(isa_name, str):
        return None
    text = isa_name.strip()
    target_id = text.rsplit('--', 1)[-1] if '--' in text else text
    pieces = target_id.split(':')
    processor = pieces[0]
    return {
        'name': text,
        'target_id': target_id,
        'processor': processor,
        'features': [piece for piece in pieces[1:] if piece],
        'generic': processor.endswith('-generic'),
    }


def _as_decimal(value):
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        try:
            return int(value.strip())
        except ValueError:
            return None
    return None
