# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse `rocm-smi` output into per-GPU facts. Pure functions, no AnsibleModule.

Every form rocm-smi prints is read, and detected from the text itself:
  json   `rocm-smi ... --json` (one line or re-indented, maybe after WARNING lines), keys card0..cardN + system
  csv    `rocm-smi ... --csv`
  text   the `GPU[n]  : Key: value` sections (`-a`, `--showproductname`, `--showuniqueid`, `--showtopo`, ...)
  table  the default concise table, whose layout changed with nearly every major version (1.x to 7.x)
parse_rocm_smi(text) returns {form, driver_version, gpus, gpu_count, error, error_kind, detail, warnings};
it raises ParseError for text that is none of these.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import json
import re

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import (
    PERMISSION_HINT, ParseError, find_json_start, hex_id, is_na, load_json, normalize_bdf, strip_ansi, to_float,
    to_int,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import firmware as fw
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gfx import VENDOR_AMD, lookup, normalize_gfx_name

# The flags rocm_smi_facts passes: one call gives ids, names, memory, sensors, clocks, the bus and the firmware
# versions. Each exists in rocm_smi.py from ROCm 3.x to 7.x (Debian 12's 5.2.3 checked; --showfwinfo takes optional
# block names, none given: every block).
JSON_ARGS = ['--showid', '--showproductname', '--showuniqueid', '--showvbios', '--showmeminfo', 'vram',
             '--showtemp', '--showpower', '--showmaxpower', '--showclocks', '--showuse', '--showbus', '--showfwinfo',
             '--json']

DRIVER_NOT_LOADED = (
    'rocm-smi: the amdgpu driver is not initialised ("Driver not initialized (amdgpu not found in modules)"), so '
    'there is no GPU to report. On bare metal install the amdgpu driver (amdgpu-dkms, or the distribution '
    'kernel\'s amdgpu) and reboot, then check `lsmod | grep amdgpu`; in a container the host must have it loaded.'
)
NO_GPU = (
    'rocm-smi found no AMD GPU ("No AMD GPUs specified"): the amdgpu driver is loaded but drives no GPU here '
    '(for example a VM or container without a passed-through GPU, or a host with only other vendors\' GPUs).'
)
PERMISSION = 'rocm-smi cannot open the GPU device nodes: permission denied; ' + PERMISSION_HINT + '.'

_HEX_ONLY = re.compile(r'^0x[0-9a-fA-F]+$')
_MHZ = re.compile(r'\((\d+(?:\.\d+)?)\s*Mhz\)', re.I)
_PCIE = re.compile(r'([\d.]+)\s*GT/s\s*x(\d+)', re.I)
_KV_LINE = re.compile(r'^GPU\[(\d+)\]\s*:\s?(.*)$')
_TEMP_KEY = re.compile(r'^temperature \(sensor ([^)]+)\) \(c\)$')
_SKIP_SECTIONS = ('supported', 'frequencies and voltages', 'voltage curve', 'valid', 'kfd', 'pages')


class _Raw(object):
    """A GPU's key/value pairs as rocm-smi printed them, looked up by lower-case key without a trailing colon.

    Keys repeat with different values ('sclk clock level:' = '8' and 'sclk clock level' = '8 (1725Mhz)'), so
    every value is kept, in order, and a lookup can ask for one that matches a pattern.
    """

    def __init__(self):
        self.values = {}

    def add(self, key, value):
        norm = key.strip().rstrip(':').strip().lower()
        self.values.setdefault(norm, []).append((key.strip(), value.strip() if isinstance(value, str) else value))

    def get(self, *keys, **kwargs):
        pattern = kwargs.get('pattern')
        exact = kwargs.get('exact')
        for key in keys:
            for original, value in self.values.get(key, ()):
                if exact and original.rstrip(':') != exact:
                    continue
                if is_na(value):
                    continue
                if pattern is not None and not pattern.search(str(value)):
                    continue
                return value
        return None

    def items(self):
        for norm, pairs in self.values.items():
            for _original, value in pairs:
                yield norm, value


def _name(value):
    """Product strings, but not the '0x1002' that rocm-smi 4.x prints as 'Card series'."""
    if value is None or _HEX_ONLY.match(str(value).strip()):
        return None
    return str(value).strip()


def _unique_id(value):
    """'0x02f048617326b1ea' from '0x2f048617326b1ea' or '2f048617326b1ea' (rocm-smi 3.x), so that it joins
    with rocminfo's 'GPU-02f048617326b1ea'; other text (redacted ids) is kept as printed."""
    if value is None:
        return None
    text = str(value).strip()
    if re.match(r'^(0x)?[0-9a-fA-F]{1,16}$', text):
        return '0x{0:016x}'.format(int(text, 16))
    return text


def _gpu(index, card):
    return {
        'index': index, 'card': card, 'device_id': None, 'device_rev': None, 'subsystem_id': None,
        'product_name': None, 'series': None, 'model': None, 'vendor': None, 'sku': None, 'unique_id': None,
        'vbios': None, 'node_id': None, 'guid': None, 'gfx_target': None, 'sriov_vf': None,
        'vram_total_bytes': None, 'vram_used_bytes': None, 'vram_use_percent': None,
        'temperature_c': None, 'temperatures_c': {}, 'power_w': None, 'power_cap_w': None,
        'sclk_mhz': None, 'mclk_mhz': None, 'use_percent': None, 'fan_percent': None, 'perf_level': None,
        'pcie_bus': None, 'link_speed_gts': None, 'link_width': None, 'numa_node': None,
        'memory_vendor': None, 'serial': None, 'voltage_mv': None, 'partitions': None, 'firmware': {},
    }


def _gpu_from_raw(index, card, raw):
    gpu = _gpu(index, card)
    gpu['device_id'] = hex_id(raw.get('device id', 'gpu id') or raw.get('card model', exact='Card Model'))
    gpu['device_rev'] = hex_id(raw.get('device rev'), 2)
    gpu['subsystem_id'] = hex_id(raw.get('subsystem id', pattern=_HEX_ONLY))
    gpu['series'] = _name(raw.get('card series'))
    gpu['product_name'] = gpu['series'] or _name(raw.get('device name'))
    gpu['model'] = raw.get('card model')
    gpu['vendor'] = raw.get('card vendor')
    gpu['sku'] = raw.get('card sku')
    gpu['unique_id'] = _unique_id(raw.get('unique id'))
    gpu['vbios'] = raw.get('vbios version')
    gpu['node_id'] = to_int(raw.get('node id'))
    gpu['guid'] = to_int(raw.get('guid'))
    gpu['gfx_target'] = normalize_gfx_name(raw.get('gfx version'))
    gpu['vram_total_bytes'] = to_int(raw.get('vram total memory (b)'))
    gpu['vram_used_bytes'] = to_int(raw.get('vram total used memory (b)'))
    gpu['vram_use_percent'] = to_float(raw.get('gpu memory allocated (vram%)', 'gpu memory use (%)'))
    for key, value in raw.items():
        match = _TEMP_KEY.match(key)
        if match and not is_na(value):
            gpu['temperatures_c'][match.group(1).replace(' ', '_')] = to_float(value)
    temps = gpu['temperatures_c']
    gpu['temperature_c'] = temps.get('edge', temps.get('junction'))
    gpu['power_w'] = to_float(raw.get('average graphics package power (w)',
                                      'current socket graphics package power (w)'))
    gpu['power_cap_w'] = to_float(raw.get('max graphics package power (w)'))
    for clock in ('sclk', 'mclk'):
        value = raw.get(clock + ' clock speed', clock + ' clock level', pattern=_MHZ)
        gpu[clock + '_mhz'] = to_float(_MHZ.search(value).group(1)) if value else None
    gpu['use_percent'] = to_float(raw.get('gpu use (%)'))
    gpu['fan_percent'] = to_float(raw.get('fan speed (%)'))
    gpu['perf_level'] = raw.get('performance level')
    gpu['pcie_bus'] = normalize_bdf(raw.get('pci bus'))
    link = raw.get('pcie clock level', pattern=_PCIE)
    if link:
        match = _PCIE.search(link)
        gpu['link_speed_gts'], gpu['link_width'] = to_float(match.group(1)), to_int(match.group(2))
    gpu['numa_node'] = to_int(raw.get('(topology) numa node'))
    gpu['memory_vendor'] = raw.get('gpu memory vendor')
    gpu['serial'] = raw.get('serial number')
    gpu['voltage_mv'] = to_float(raw.get('voltage (mv)'))
    compute, memory = raw.get('compute partition'), raw.get('memory partition')
    if compute or memory:
        gpu['partitions'] = {'compute': compute, 'memory': memory}
    # The "Firmware Information" section (-a, --showfwinfo): "MEC firmware version: 138", "SMC ...: 00.85.91.00".
    gpu['firmware'] = fw.from_rocm_smi(raw.items())
    return _finish(gpu)


def _finish(gpu):
    known = lookup(VENDOR_AMD, gpu['device_id'])
    if gpu['gfx_target'] is None:
        gpu['gfx_target'] = known['gfx_target']
    sriov = 'SRIOV' in '{0} {1}'.format(gpu['vbios'] or '', gpu['sku'] or '').upper()
    gpu['sriov_vf'] = True if (known['vf'] or sriov) else (False if known['vf'] is False else None)
    return gpu


def _result(form):
    return {'form': form, 'driver_version': None, 'gpus': [], 'gpu_count': 0, 'error': None,
            'error_kind': None, 'detail': [], 'warnings': []}


def _card_index(name, where):
    """N of 'cardN' / 'GPU[N]'; ParseError when N is no number rocm-smi prints (out of range)."""
    index = to_int(name)
    if index is None:
        raise ParseError('rocm-smi {0} has a card number out of range ({1!r}): the output is damaged.'.format(
            where, name[:40]))
    return index


def _parse_json(text, start):
    data = load_json(text, start, 'rocm-smi', 'rocm-smi --json')
    result = _result('json')
    system = data.get('system')
    if isinstance(system, dict):
        result['driver_version'] = system.get('Driver version')
    cards = []
    for key, values in data.items():
        match = re.match(r'^card(\d+)$', key)
        if match and isinstance(values, dict):
            raw = _Raw()
            for name, value in values.items():
                raw.add(name, value if isinstance(value, str) else json.dumps(value))
            cards.append(_gpu_from_raw(_card_index(match.group(1), 'JSON'), key, raw))
    if not cards and not isinstance(system, dict):
        raise ParseError('rocm-smi JSON output has neither card0..cardN nor system keys: {0}'.format(
            ', '.join(sorted(str(key) for key in data)[:5]) or 'empty object'))
    result['gpus'] = sorted(cards, key=lambda gpu: gpu['index'])
    return result


def _parse_csv(text):
    try:
        rows = list(csv.reader(line for line in text.splitlines() if line.strip()))
    except csv.Error as exc:  # a field over csv's 128 KiB limit, a NUL byte, ...
        raise ParseError('rocm-smi CSV output is damaged ({0}). Save the whole output of `rocm-smi --csv` and try '
                         'again.'.format(exc))
    header = rows[0]
    result = _result('csv')
    for row in rows[1:]:
        if len(row) != len(header):
            raise ParseError('rocm-smi CSV row has {0} fields, the header {1}: the output is cut short or '
                             'damaged.'.format(len(row), len(header)))
        match = re.match(r'^card(\d+)$', row[0])
        if not match:
            if row[0] == 'system':
                continue
            raise ParseError('rocm-smi CSV row does not start with cardN: {0!r}'.format(row[0][:40]))
        raw = _Raw()
        for name, value in zip(header[1:], row[1:]):
            raw.add(name, value)
        result['gpus'].append(_gpu_from_raw(_card_index(match.group(1), 'CSV'), row[0], raw))
    return result


def _parse_kv(text):
    result = _result('text')
    raws = {}
    section = ''
    for line in text.splitlines():
        if line.startswith('='):
            section = line.strip('= \t').lower()
            continue
        if line.startswith('Driver version:'):
            result['driver_version'] = line.split(':', 1)[1].strip()
            continue
        match = _KV_LINE.match(line)
        if not match:
            continue
        index = _card_index(match.group(1), 'text')
        raw = raws.setdefault(index, _Raw())
        if any(word in section for word in _SKIP_SECTIONS):
            continue
        key, sep, value = match.group(2).partition(':')
        if sep and key.strip() and not re.match(r'^(\d+|S)$', key.strip()):
            raw.add(key, value.strip())
    result['gpus'] = [_gpu_from_raw(index, 'card{0}'.format(index), raws[index]) for index in sorted(raws)]
    return result


_TABLE_HEADER = re.compile(r'^\s*(GPU|Device)\s{2,}\S.*\b(Temp|SCLK)\b')


def _columns(header):
    """[(name, start)] from a header line; names may hold single spaces ('Temp (DieEdge)', 'SCLK OD')."""
    return [(match.group(0), match.start()) for match in re.finditer(r'\S+(?: \S+)*', header)]


def _cells(line, columns):
    """Split a table row by the header's column spans.

    Cells are runs of text separated by two or more spaces; each goes to the column its span overlaps most, so
    right-aligned numbers that start left of their header still land in the right column, and a cell with inner
    spaces ('0x744c,   47413') is joined back.
    """
    bounds = [start for _name, start in columns[1:]] + [10 ** 6]
    cells = [[] for _column in columns]
    for match in re.finditer(r'\S+(?: \S+)*', line):
        best, best_overlap = 0, -1
        for number, (_name, start) in enumerate(columns):
            overlap = min(match.end(), bounds[number]) - max(match.start(), start)
            if overlap > best_overlap:
                best, best_overlap = number, overlap
        cells[best].append(match.group(0))
    return dict((name, ' '.join(parts)) for (name, _start), parts in zip(columns, cells))


def _gpu_from_row(row, sub):
    index = to_int(row.get('GPU', row.get('Device')))
    gpu = _gpu(index, 'card{0}'.format(index))
    ids = row.get('IDs') or row.get('[Model : Revision]') or ''
    found = re.findall(r'0x[0-9a-fA-F]+|\b\d+\b', ids)
    if found:
        gpu['device_id'] = hex_id(found[0])
        if len(found) > 1:
            if 'IDs' in row:
                gpu['guid'] = to_int(found[1])
            else:
                gpu['device_rev'] = hex_id(found[1], 2)
    gpu['node_id'] = to_int(row.get('Node'))
    temp_name = next((name for name in row if name.startswith('Temp')), None)
    if temp_name:
        sensor = sub.get(temp_name) or (temp_name[4:].strip(' ()') or 'edge')
        gpu['temperature_c'] = to_float(row[temp_name])
        if gpu['temperature_c'] is not None:
            gpu['temperatures_c'][sensor.strip('()').lower().replace('dieedge', 'edge')] = gpu['temperature_c']
    gpu['power_w'] = to_float(row.get('AvgPwr', row.get('Power')))
    gpu['power_cap_w'] = to_float(row.get('PwrCap'))
    gpu['sclk_mhz'] = to_float(row.get('SCLK'))
    gpu['mclk_mhz'] = to_float(row.get('MCLK'))
    gpu['fan_percent'] = to_float(row.get('Fan'))
    perf = row.get('Perf')
    gpu['perf_level'] = None if is_na(perf) else perf
    gpu['vram_use_percent'] = to_float(row.get('VRAM%'))
    gpu['use_percent'] = to_float(row.get('GPU%'))
    partitions = row.get('Partitions')
    if partitions and not all(is_na(part) for part in partitions.split(', ')[:2]):
        gpu['partitions'] = partitions
    return _finish(gpu)


def _parse_table(lines, at):
    result = _result('table')
    columns = _columns(lines[at])
    sub = {}
    names_below = False
    row_at = at + 1
    if row_at < len(lines) and lines[row_at].strip() and not lines[row_at].lstrip().startswith('='):
        if not re.match(r'^\s*\d', lines[row_at]):
            # Second header line: sensor names '(Edge)' under Temp, 'Name (20 chars)' under Device (ROCm 6.0).
            for name, value in _cells(lines[row_at], columns).items():
                if value:
                    sub[name] = value
            names_below = 'Name' in ''.join(sub.values())
            row_at += 1
    for line in lines[row_at:]:
        if not line.strip():
            continue
        if line.lstrip().startswith('='):
            if result['gpus'] or 'End of ROCm SMI Log' in line:
                break
            continue
        row = _cells(line, columns)
        first = row.get('GPU', row.get('Device'))
        if to_int(first) is None:
            if names_below and result['gpus'] and result['gpus'][-1]['product_name'] is None:
                result['gpus'][-1]['product_name'] = line.strip()
            continue
        gpu = _gpu_from_row(row, sub)
        if gpu['device_id'] is None and all(gpu[key] is None for key in (
                'temperature_c', 'power_w', 'sclk_mhz', 'mclk_mhz', 'perf_level')):
            # rocm-smi 1.x lists a non-AMD card0 as a row of N/A (fixture default-rocm1.9-*).
            result['warnings'].append('skipped GPU {0}: every value is N/A (not an AMD GPU)'.format(first))
            continue
        result['gpus'].append(gpu)
    return result


def diagnose(text):
    """(error_kind, message) for rocm-smi's no-GPU messages, else None."""
    if 'Driver not initialized' in text:
        return 'driver_not_loaded', DRIVER_NOT_LOADED
    if re.search(r'Permission denied', text) and re.search(r'/dev/(kfd|dri)', text):
        return 'permission_denied', PERMISSION
    if 'No AMD GPUs specified' in text:
        return 'no_gpu', NO_GPU
    return None


def _noise(text):
    """Lines printed before the output proper ('Exception caught: map::at', cat errors) and WARNING lines."""
    noise = []
    before = True
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if before and (stripped.startswith(('=', '{', '[', 'GPU[', 'device,')) or _TABLE_HEADER.match(line)):
            before = False
        if before or stripped.startswith(('WARNING', 'ERROR')):
            noise.append(stripped)
    return noise[:10]


def parse_rocm_smi(text):
    """Facts from any rocm-smi output form (see the module docstring); ParseError for anything else."""
    if not isinstance(text, str):
        raise ParseError('rocm-smi output must be text, got {0}'.format(type(text).__name__))
    text = strip_ansi(text).replace('\r\n', '\n')
    lines = text.splitlines()
    first = next((line for line in lines if line.strip()), '')
    json_at = find_json_start(text)
    header_at = next((number for number, line in enumerate(lines) if _TABLE_HEADER.match(line)), None)

    if first.startswith('device,'):
        result = _parse_csv(text)
    elif json_at >= 0 and text[json_at] == '{':
        result = _parse_json(text, json_at)
    elif json_at >= 0 and text.lstrip().startswith('['):
        raise ParseError('rocm-smi JSON is an object keyed by card0..cardN, this is a JSON array: amd-smi prints '
                         'those, read it with gpulab.rocm.amd_smi_facts.')
    elif re.search(r"^GPU\[\d+\]", text, re.M):
        result = _parse_kv(text)
    elif header_at is not None:
        result = _parse_table(lines, header_at)
    else:
        found = diagnose(text)
        if not found:
            raise ParseError('this is not rocm-smi output: no JSON, CSV, GPU[n] lines or concise table, and no '
                             'known error message. Give the output of `rocm-smi --json` (or plain `rocm-smi`).')
        result = _result('error')
        result['error_kind'], result['error'] = found
        result['detail'] = [line.strip() for line in lines if line.strip()][:6]
        return result

    result['warnings'] = _noise(text) + result['warnings']
    result['gpu_count'] = len(result['gpus'])
    if not result['gpus']:
        found = diagnose(text) or ('no_gpu', NO_GPU)
        result['error_kind'], result['error'] = found
        result['detail'] = result['warnings'][:6]
    return result
