# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A GPU's firmware versions from each place that prints them, in one shape (docs/hardware.md, "Firmware
inventory"). Standard library only: the metrics writer on the nodes imports it.

Sources, in the order they are trusted (merged() takes the first that lists a GPU's microcode):
  amd-smi   `amd-smi firmware` (alias `ucode`): "GPU: N / FW_LIST: / FW n: (or FW_n:) / FW_ID / FW_VERSION"
            (amd_smi.py reads the text, from_amd_smi() its list); `amd-smi static --ifwi` gives the IFWI block
  debugfs   /sys/kernel/debug/dri/<minor or PCI address>/amdgpu_firmware_info (root, debugfs mounted): one
            "<NAME> feature version: F, firmware version: 0xV" line per block, then "VBIOS version: ..."
  rocm-smi  the "Firmware Information" section of `rocm-smi -a` / `--showfwinfo` ("<NAME> firmware version: V",
            JSON keys "<NAME> firmware version")
  sysfs     amdgpu's /sys/bus/pci/devices/<bdf>/fw_version/<name>_fw_version ("0x%08x"), readable by anyone

One record per GPU (record()): {'index', 'pci_bdf', 'vbios', 'ifwi', 'boot_firmware', 'firmware', 'source'}.
'firmware' maps a block's normalized id ('mec', 'sos', 'smc', 'ta_ras', 'sdma0', ...) to its version as
'0x%08x' of the 32-bit number the driver holds, whatever the source printed (amd-smi's 147, 00.36.01.50 and
85.110.0, rocm-smi's 00.85.91.00, debugfs' 0x00000093): the same firmware compares equal across sources. A version
whose form is not known is kept as printed; a block at version 0 has no firmware loaded and is left out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import gpu_sysfs
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import ParseError, is_na, normalize_bdf

SOURCES = ('amd-smi', 'debugfs', 'rocm-smi', 'sysfs')
DEBUGFS_ROOT = '/sys/kernel/debug'
# amdgpu_firmware_info is about 2 KiB (40 blocks); anything much larger is not it.
MAX_DEBUGFS_BYTES = 64 * 1024
MAX_BLOCKS = 128
MAX_TEXT = 64
# Block names as each source spells them -> the normalized id. Everything else: lower case, spaces as '_'.
# amd-smi's SDMA0/SDMA1 are instances 0 and 1; rocm-smi's and sysfs' SDMA/SDMA2 are the same two instances.
_ALIASES = {
    'amd-smi': {
        'cp_me': 'me', 'cp_pfp': 'pfp', 'cp_ce': 'ce', 'cp_mec1': 'mec', 'cp_mec2': 'mec2', 'cp_mes': 'mes',
        'cp_mec_jt1': 'mec_jt1', 'cp_mec_jt2': 'mec_jt2', 'psp_sosdrv': 'sos', 'pm': 'smc', 'smu': 'smc',
        'rlc_restore_list_cntl': 'rlc_srlc', 'rlc_restore_list_gpm_mem': 'rlc_srlg',
        'rlc_restore_list_srm_mem': 'rlc_srls', 'rlc_p': 'rlcp', 'rlc_v': 'rlcv', 'mes_kiq': 'mes_kiq',
    },
    'rocm-smi': {'sdma': 'sdma0', 'sdma2': 'sdma1'},
    'sysfs': {'sdma': 'sdma0', 'sdma2': 'sdma1'},
    'debugfs': {},
}
# Blocks whose dotted versions are decimal bytes (amd-smi's PM 85.110.0 and 00.104.74.00; rocm-smi prints every
# dotted version that way: SMC 00.85.91.00, TA RAS 32.00.00.12). amd-smi's other dotted versions are its hex
# digits in pairs (VCN 06.11.30.0C from amd-smi 24.7.1; the ROCm 6.2-era one of the blog capture without the leading
# zero: 61.13.00.C).
_DECIMAL_BYTES = ('smc',)
_ID = re.compile(r'^[a-z0-9_]{1,48}$')
_HEX = re.compile(r'^0x[0-9a-fA-F]{1,16}$')
_DEC = re.compile(r'^\d{1,20}$')
_DOTTED = re.compile(r'^[0-9A-Fa-f]{1,3}(?:\.[0-9A-Fa-f]{1,3}){1,7}$')
_DEBUGFS_LINE = re.compile(
    r'^(?P<name>[A-Z][A-Za-z0-9_ ]{0,40}?) feature version: (?P<feature>0x[0-9a-fA-F]+|\d+), '
    r'(?:program: \d+, )?firmware version: (?P<version>0x[0-9a-fA-F]+)(?: \([0-9.]+\))?\s*$')
_DEBUGFS_VBIOS = re.compile(r'^VBIOS version: (\S.{0,62})$')
_DRI_NAME = re.compile(r'\bdev=([0-9a-fA-F:.]+)')
_ROCM_SMI_KEY = re.compile(r'^([A-Za-z][A-Za-z0-9_ ]{0,40}?) firmware version$')
_SYSFS_FILE = re.compile(r'^([a-z0-9_]{1,40})_fw_version$')


def normalize_id(source, name):
    """The block's id from a source's name for it: 'CP_MEC1' (amd-smi) -> 'mec', 'TA RAS' -> 'ta_ras', 'SDMA2'
    (rocm-smi) -> 'sdma1'; None for a name that is no block name."""
    key = re.sub(r'[\s-]+', '_', str(name).strip().lower())
    key = _ALIASES.get(source, {}).get(key, key)
    return key if _ID.match(key) else None


def _hex32(number):
    return '0x%08x' % number if 0 < number < (1 << 64) else None


def normalize_version(source, block, value):
    """'0x%08x' of the number a source printed for a block, the text itself where its form is not known; None for
    no value (N/A, 'Not supported') and for 0 (no firmware loaded)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, int):
        return _hex32(value) if value >= 0 else None
    text = str(value).strip()
    if is_na(text) or len(text) > MAX_TEXT:
        return None
    if _HEX.match(text):
        return _hex32(int(text, 16))
    if _DEC.match(text):
        return _hex32(int(text))
    if _DOTTED.match(text):
        parts = text.split('.')
        decimal = source == 'rocm-smi' or block in _DECIMAL_BYTES
        if decimal and len(parts) <= 4 and all(part.isdigit() and int(part) < 256 for part in parts):
            number = 0
            for part in parts:
                number = (number << 8) | int(part)
            return _hex32(number)
        if not decimal and len(parts) <= 4 and all(len(part) == 2 for part in parts[:-1]):
            return _hex32(int(''.join(parts), 16))
    return text if text != '0' else None


def _blocks(source, pairs):
    """{id: version} from (name, value) pairs; the first value of a block wins; at most MAX_BLOCKS."""
    found = {}
    for name, value in pairs:
        block = normalize_id(source, name)
        version = normalize_version(source, block, value) if block else None
        if version is not None and block not in found and len(found) < MAX_BLOCKS:
            found[block] = version
    return found


def from_amd_smi(fw_list):
    """{id: version} from amd-smi's FW_LIST as amd_smi.py reads it: the text form's {'fw 0': {'fw_id', 'fw_version'}}
    (or 'fw_0'), or a JSON list of {'fw_id' (or 'fw_name'), 'fw_version'}."""
    entries = fw_list.values() if isinstance(fw_list, dict) else fw_list if isinstance(fw_list, list) else []
    pairs = []
    for entry in entries:
        if isinstance(entry, dict):
            name = entry.get('fw_id', entry.get('fw_name'))
            if name is not None:
                pairs.append((name, entry.get('fw_version')))
    return _blocks('amd-smi', pairs)


def parse_debugfs(text):
    """{'firmware': {id: version}, 'vbios': str or None} from amdgpu_firmware_info (every kernel's line form: TA
    blocks with a hex feature version, SMC with "program: N" and "(x.y.z)" on newer ones). Older kernels printed a TA
    block's version in its feature field and 0 as its firmware version (fixture popos21.10): that version is taken.
    ParseError for text with no such line."""
    if not isinstance(text, str):
        raise ParseError('amdgpu_firmware_info must be text, got %s' % type(text).__name__)
    pairs, vbios, seen = [], None, False
    for line in text.splitlines():
        match = _DEBUGFS_LINE.match(line.strip())
        if match:
            seen = True
            name, version = match.group('name'), int(match.group('version'), 16)
            feature = match.group('feature')
            if name.startswith('TA ') and version == 0 and feature.startswith('0x'):
                version = int(feature, 16)
            pairs.append((name, version))
            continue
        found = _DEBUGFS_VBIOS.match(line.strip())
        if found:
            vbios = found.group(1).strip() or None
    if not seen:
        raise ParseError('this is not amdgpu_firmware_info: no "<NAME> feature version: F, firmware version: 0xV" '
                         'line. Read /sys/kernel/debug/dri/<N>/amdgpu_firmware_info as root.')
    return {'firmware': _blocks('debugfs', pairs), 'vbios': vbios}


def from_rocm_smi(items):
    """{id: version} from rocm-smi's (key, value) pairs of one GPU, keys as printed ('MEC firmware version',
    'TA RAS firmware version:'); other keys are ignored."""
    pairs = []
    for key, value in items:
        match = _ROCM_SMI_KEY.match(str(key).strip().rstrip(':').strip())
        if match:
            pairs.append((match.group(1), value))
    return _blocks('rocm-smi', pairs)


def read_sysfs(device_dir):
    """{id: version} from the function's fw_version/*_fw_version files ({} where the driver exposes none)."""
    folder = os.path.join(device_dir, 'fw_version')
    try:
        names = sorted(os.listdir(folder))[:MAX_BLOCKS]
    except OSError:
        return {}
    pairs = []
    for name in names:
        match = _SYSFS_FILE.match(name)
        text = gpu_sysfs.read_attr(os.path.join(folder, name)) if match else None
        if text is not None:
            pairs.append((match.group(1), text))
    return _blocks('sysfs', pairs)


def _read_bounded(path, limit):
    """The text of a root-owned debug file, without following a link; None when it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, 'O_NOFOLLOW', 0) | getattr(os, 'O_NONBLOCK', 0))
    except OSError:
        return None
    try:
        data = os.read(fd, limit + 1)
    except OSError:
        return None
    finally:
        os.close(fd)
    if len(data) > limit:
        return None
    return data.decode('ascii', 'replace')


def debugfs_dirs(debugfs_root=DEBUGFS_ROOT):
    """{PCI address: the GPU's folder under <debugfs>/dri}: dri/<PCI address> (newer kernels have it: 6.17 in issue
    6155), else the dri/<minor> whose 'name' says dev=<address>; {} where debugfs is not mounted or not readable.
    Links are not followed."""
    dri = os.path.join(debugfs_root, 'dri')
    try:
        names = sorted(os.listdir(dri))[:4096]
    except OSError:
        return {}
    found = {}
    for name in names:
        path = os.path.join(dri, name)
        if os.path.islink(path) or not os.path.isdir(path):
            continue
        bdf = normalize_bdf(name)
        if bdf:
            found[bdf] = path
        elif name.isdigit():
            match = _DRI_NAME.search(_read_bounded(os.path.join(path, 'name'), 4096) or '')
            bdf = normalize_bdf(match.group(1)) if match else None
            if bdf:
                found.setdefault(bdf, path)
    return found


def read_debugfs(bdf, debugfs_root=DEBUGFS_ROOT, dirs=None):
    """parse_debugfs() of the GPU's amdgpu_firmware_info; None where there is none to read (not root, debugfs not
    mounted, no such GPU) or it is not that file's text. dirs: debugfs_dirs() of the root, where the caller has it."""
    folder = (debugfs_dirs(debugfs_root) if dirs is None else dirs).get(bdf)
    text = _read_bounded(os.path.join(folder, 'amdgpu_firmware_info'), MAX_DEBUGFS_BYTES) if folder else None
    if text is None:
        return None
    try:
        return parse_debugfs(text)
    except ParseError:
        return None


def add_to_pci(gpu_pci, sysfs_root='/sys'):
    """gpu_pci_facts' AMD devices with their firmware: 'vbios_version' (sysfs vbios_version), 'firmware' (sysfs
    fw_version/, read_sysfs) and 'firmware_debugfs' (read_debugfs under <sysfs_root>/kernel/debug: root only; None
    where it cannot be read). Returns gpu_pci."""
    devices_dir = os.path.join(sysfs_root, 'bus', 'pci', 'devices')
    debugfs_root = os.path.join(sysfs_root, 'kernel', 'debug')
    dirs = None
    for device in (gpu_pci or {}).get('devices') or []:
        if device.get('vendor') != 'AMD' or not device.get('bdf'):
            continue
        if dirs is None:
            dirs = debugfs_dirs(debugfs_root)
        device_dir = os.path.join(devices_dir, device['bdf'])
        text = gpu_sysfs.read_attr(os.path.join(device_dir, 'vbios_version'))
        device['vbios_version'] = text.splitlines()[0].strip()[:MAX_TEXT] if text else None
        device['firmware'] = read_sysfs(device_dir)
        device['firmware_debugfs'] = read_debugfs(device['bdf'], debugfs_root, dirs)
    return gpu_pci


def record(index=None, pci_bdf=None, source=None, firmware=None, vbios=None, ifwi=None, boot_firmware=None):
    """One GPU's firmware in the normalized shape."""
    return {'index': index, 'pci_bdf': pci_bdf, 'vbios': vbios or None, 'ifwi': ifwi or None,
            'boot_firmware': boot_firmware or None, 'firmware': dict(firmware or {}), 'source': source}


def merged(amd_smi_gpu=None, rocm_smi_gpu=None, pci_device=None, index=None, pci_bdf=None):
    """One GPU's record from what each source says of it (an amd_smi_facts GPU, a rocm_smi_facts GPU, a
    gpu_pci_facts device, any may be None): the microcode list from the first source that has one, in the order
    amd-smi, debugfs, rocm-smi, sysfs; the VBIOS part number likewise (sysfs' vbios_version last); the IFWI version
    and the boot firmware from amd-smi only."""
    amd, rocm, pci = amd_smi_gpu or {}, rocm_smi_gpu or {}, pci_device or {}
    debugfs = pci.get('firmware_debugfs') or {}
    lists = {'amd-smi': amd.get('firmware'), 'debugfs': debugfs.get('firmware'), 'rocm-smi': rocm.get('firmware'),
             'sysfs': pci.get('firmware')}
    parts = {'amd-smi': amd.get('vbios'), 'debugfs': debugfs.get('vbios'), 'rocm-smi': rocm.get('vbios'),
             'sysfs': pci.get('vbios_version')}
    source = next((name for name in SOURCES if lists.get(name)), None)
    vbios = next((parts[name] for name in SOURCES if parts.get(name)), None)
    if index is None:
        index = amd.get('index', rocm.get('index'))
    if pci_bdf is None:
        pci_bdf = _bus(amd) or _bus(rocm) or _bus(pci)
    return record(index, pci_bdf, source, lists[source] if source else {}, vbios, amd.get('vbios_version'),
                  amd.get('boot_firmware'))


def _bus(gpu):
    return normalize_bdf(str(gpu.get('pcie_bus') or gpu.get('pci_bus') or gpu.get('bdf') or '')) or None


def inventory(amd_smi=None, rocm_smi=None, gpu_pci=None):
    """merged() of every GPU of the three facts (amd_smi_facts, rocm_smi_facts, gpu_pci_facts; any may be None),
    joined by PCI address (a GPU a tool lists without one is joined by its index among that tool's GPUs only when
    no other source lists GPUs)."""
    slots, order = {}, []

    def slot(bus, index):
        key = bus or 'index %s' % index
        if key not in slots:
            slots[key] = {'bus': bus, 'index': index}
            order.append(key)
        return slots[key]

    for gpu in (amd_smi or {}).get('gpus') or []:
        slot(_bus(gpu), gpu.get('index'))['amd'] = gpu
    for device in (gpu_pci or {}).get('devices') or []:
        if device.get('vendor') == 'AMD':
            slot(_bus(device), None)['pci'] = device
    for gpu in (rocm_smi or {}).get('gpus') or []:
        bus = _bus(gpu)
        if bus is None and order:
            continue  # rocm-smi's table prints no address: nothing to join it with
        slot(bus, gpu.get('index'))['rocm'] = gpu
    return [merged(slots[key].get('amd'), slots[key].get('rocm'), slots[key].get('pci'), slots[key]['index'],
                   slots[key]['bus']) for key in order]
