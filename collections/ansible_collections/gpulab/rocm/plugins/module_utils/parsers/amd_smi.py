# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse `amd-smi` output into per-GPU facts shaped like rocm_smi's. Pure functions, no AnsibleModule.

Read, and detected from the text itself:
  json    `amd-smi static|metric|list|topology --json`, as a bare array (amd-smi 24/25) or {"gpu_data": [...]}
          (25.x/26.x); values are scalars, "N/A" or {"value": X, "unit": "U"}
  text    `amd-smi list` and `amd-smi metric` (upper-case nested keys, units inline)
  csv     `amd-smi metric --csv`
  table   the default view of amd-smi 26.x (no arguments)
  monitor `amd-smi monitor` (one row per GPU: POWER, GPU_T, ...; its POWER has no cap)
`amd-smi firmware` (text: "GPU: N / FW_LIST: / FW n:" or "FW_n:") is read as text; parsers/firmware.py normalizes
its list. parse_amd_smi(text, ...) merges any number of outputs per GPU index (the module passes static, metric,
list and firmware) and returns {forms, kinds, amdsmi_version, rocm_version, driver_version, gpus, gpu_count, ...}.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import csv
import re

from ansible_collections.gpulab.rocm.plugins.module_utils.parsers._facts_common import (
    MAX_DEPTH, PERMISSION_HINT, ParseError, find_json_start, hex_id, is_na, load_json, normalize_bdf, strip_ansi,
    to_float, to_int,
)
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers import firmware as fw
from ansible_collections.gpulab.rocm.plugins.module_utils.parsers.gfx import VENDOR_AMD, lookup, normalize_gfx_name

# `firmware` as text: the form of every real capture (fixtures amd-smi/firmware-text-*); its JSON is read too.
COMMANDS = (['static', '--json'], ['metric', '--json'], ['list', '--json'], ['firmware'])

DRIVER_NOT_LOADED = (
    'amd-smi: the amdgpu driver is not initialised ("driver not initialized (amdgpu not found in modules)"), so '
    'there is no GPU to report. On bare metal install the amdgpu driver (amdgpu-dkms, or the distribution '
    'kernel\'s amdgpu) and reboot, then check `lsmod | grep amdgpu`; in a container the host must have it loaded.'
)
NO_GPU = (
    'amd-smi found no AMD GPU ("Unable to detect any GPU devices"): check that the amdgpu driver is loaded and '
    'bound to a GPU (`lspci -k`, `dmesg | grep -i amdgpu`) and that this ROCm supports it.'
)
PERMISSION = 'amd-smi cannot open the GPU device nodes: permission denied; ' + PERMISSION_HINT + '.'
USAGE = ('this is amd-smi\'s usage text (amd-smi {0} prints it when run without a command): it holds no GPU '
         'facts. Give the output of `amd-smi static --json`, `amd-smi metric --json` or `amd-smi list --json`.')

_MB = 1024 * 1024  # amd-smi's "MB" are MiB: an 8 GiB RX 6600 reports 8176 MB
_BYTE_UNITS = {'B': 1, 'KB': 1024, 'KIB': 1024, 'MB': _MB, 'MIB': _MB, 'GB': 1024 * _MB, 'GIB': 1024 * _MB}
_UNIT_VALUE = re.compile(r'^(-?\d+(?:\.\d+)?)(?:\s+(\S.*))?$')
_UUID = re.compile(r'^([0-9a-f]{2})ff[0-9a-f]{4}-0000-1000-80([0-9a-f]{2})-([0-9a-f]{12})$')
_GPU_HEADER = re.compile(r'^GPU: (\d+)\s*$')
_GPU_HEADER_IN_TEXT = re.compile(r'^GPU: \d+[ \t]*$', re.M)
_BANNER = re.compile(r'Version: (\S+) \| ROCm version: (\S+)')
_TABLE_HEAD = re.compile(r'AMD-SMI (\S+)\s+amdgpu version: (\S+)\s+ROCm version: (\S+)')
_TABLE_ROW = re.compile(r'^\|([^|]*)\|([^|]*)\|$')  # a GPU row of the default table: two cells between pipes
_TABLE_RULE = re.compile(r'^[|+][-=+]*[|+]$')  # '|====+====|', '+----+----+', '|----+----|'
_PARTITION_MODE = re.compile(r'^(N/A|[A-Za-z0-9_]+)/(N/A|[A-Za-z0-9_]+)$')  # 'SPX/NPS1', 'SPX/N/A'
# The default view's Power-Usage cell: '142/750 W', 'N/A/750 W', an APU's '14 W' (no cap; amd-smi 26.1 on Strix
# Halo) or 'N/A/0 W' (a cap of 0 is none), or 'N/A' alone.
_TABLE_POWER = re.compile(r'(N/A|\d+(?:\.\d+)?)(?:/(N/A|\d+(?:\.\d+)?))? W\s*$')
_FW_KEY = re.compile(r'^FW[ _]\d{1,3}$')  # amd-smi firmware's 'FW 0:' (some builds: 'FW_0:')
_MONITOR_HEAD = re.compile(r'^\s*GPU\s{2,}(?:XCP\s{2,})?POWER\b')
# `amd-smi monitor` columns (the ROCm 6.2-era names, then the newer short ones) -> where the value goes in amd-smi's
# JSON shape.
_MONITOR_PATHS = {
    'POWER': ('power', 'socket_power'), 'PWR_CAP': ('limit', 'socket_power'),
    'GPU_TEMP': ('temperature', 'hotspot'), 'GPU_T': ('temperature', 'hotspot'),
    'MEM_TEMP': ('temperature', 'mem'), 'MEM_T': ('temperature', 'mem'),
    'GFX_UTIL': ('usage', 'gfx_activity'), 'GFX%': ('usage', 'gfx_activity'),
    'MEM_UTIL': ('usage', 'umc_activity'), 'MEM%': ('usage', 'umc_activity'),
    'GFX_CLOCK': ('clock', 'gfx_0', 'clk'), 'GFX_CLK': ('clock', 'gfx_0', 'clk'),
    'MEM_CLOCK': ('clock', 'mem_0', 'clk'), 'MEM_CLK': ('clock', 'mem_0', 'clk'),
}
_CSV_PATHS = {
    'gfx_activity': ('usage', 'gfx_activity', '%'), 'umc_activity': ('usage', 'umc_activity', '%'),
    'socket_power': ('power', 'socket_power', 'W'),
    'gfx_0_clk': ('clock', 'gfx_0', 'clk', 'MHz'), 'mem_0_clk': ('clock', 'mem_0', 'clk', 'MHz'),
    'edge': ('temperature', 'edge', 'C'), 'hotspot': ('temperature', 'hotspot', 'C'),
    'mem': ('temperature', 'mem', 'C'), 'width': ('pcie', 'width', None), 'speed': ('pcie', 'speed', 'GT/s'),
    'total_vram': ('mem_usage', 'total_vram', 'MB'), 'used_vram': ('mem_usage', 'used_vram', 'MB'),
    'perf_level': ('perf_level', None),
}


def diagnose(text):
    """(error_kind, message) for amd-smi's no-GPU messages, else None."""
    if re.search(r'driver not initiali[sz]ed', text, re.I):
        return 'driver_not_loaded', DRIVER_NOT_LOADED
    if re.search(r'Permission denied', text) and re.search(r'/dev/(kfd|dri)', text):
        return 'permission_denied', PERMISSION
    if 'Unable to detect any GPU devices' in text:
        return 'no_gpu', NO_GPU
    return None


def _kind(entry):
    """Which amd-smi command printed this per-GPU JSON object."""
    if any(key in entry for key in ('asic', 'bus', 'ifwi', 'vbios', 'board', 'vram', 'limit')):
        return 'static'
    if any(key in entry for key in ('usage', 'power', 'clock', 'temperature', 'mem_usage', 'pcie')):
        return 'metric'
    if 'fw_list' in entry:
        return 'firmware'
    if 'links' in entry:
        return 'topology'
    if 'uuid' in entry or 'kfd_id' in entry:
        return 'list'
    return None


def _merge(into, data):
    for key, value in data.items():
        if isinstance(value, dict) and isinstance(into.get(key), dict):
            _merge(into[key], value)
        elif key not in into or is_na(into[key]):
            into[key] = value


# --- the readers: each returns (form, [(gpu index, nested dict)], extra facts) -----------------------------

def _read_json(text, start):
    data = load_json(text, start, 'amd-smi', 'amd-smi static --json')
    if isinstance(data, dict) and 'gpu_data' in data:
        data = data['gpu_data']
    if not isinstance(data, list):
        keys = ', '.join(sorted(data)[:5]) if isinstance(data, dict) else '-'
        raise ParseError('amd-smi JSON output should be an array of GPUs or {{"gpu_data": [...]}}, got a JSON '
                         '{0} with keys {1}.'.format(type(data).__name__, keys))
    entries = []
    for entry in data:
        if not isinstance(entry, dict) or to_int(entry.get('gpu')) is None:
            raise ParseError('amd-smi JSON array holds an entry without a "gpu" index: {0!r}'.format(
                str(entry)[:60]))
        entries.append((to_int(entry['gpu']), entry))
    return 'json', entries, {}


def _text_value(value, in_list=False):
    """'137 W' -> {'value': 137, 'unit': 'W'}; 'N/A mV' -> {'value': 'N/A', 'unit': 'mV'}; '[a, b]' -> list.

    A number out of range stays the text it was (to_int and to_float give None for it later).
    """
    value = value.strip()
    if not in_list and value.startswith('[') and value.endswith(']'):
        return [_text_value(item, True) for item in value[1:-1].split(',') if item.strip()]
    if value.startswith('N/A ') and len(value) > 4:
        return {'value': 'N/A', 'unit': value[4:].strip()}
    match = _UNIT_VALUE.match(value)
    if match:
        number = to_float(match.group(1)) if '.' in match.group(1) else to_int(match.group(1))
        if number is None:
            number = match.group(1)
        return {'value': number, 'unit': match.group(2).strip()} if match.group(2) else number
    return value


def _read_text(lines):
    """`amd-smi list` / `amd-smi metric` text: 'GPU: N' blocks of indented 'KEY: value' lines."""
    entries = []
    stack = []  # [(indent, dict)]
    last = None  # (dict, key) of the last value, for list values wrapped over several lines
    for line in lines:
        if not line.strip():
            continue
        header = _GPU_HEADER.match(line)
        if header:
            index = to_int(header.group(1))
            if index is None:
                raise ParseError('amd-smi text output has a GPU number out of range: {0!r}'.format(line[:60]))
            entry = {'gpu': index}
            entries.append((index, entry))
            stack, last = [(0, entry)], None
            continue
        if not stack:
            raise ParseError('amd-smi text output must start with "GPU: N", found {0!r}'.format(line[:60]))
        indent = len(line) - len(line.lstrip())
        key, sep, value = line.strip().partition(':')
        if not sep or (' ' in key and not _FW_KEY.match(key)):
            value = last[0].get(last[1]) if last else None
            if isinstance(value, str) and value.startswith('[') and not value.endswith(']'):
                last[0][last[1]] += ' ' + line.strip()  # a list wrapped over several lines
                continue
            raise ParseError('amd-smi text output has a line that is not "KEY: value": {0!r}'.format(line[:60]))
        while len(stack) > 1 and stack[-1][0] >= indent:
            stack.pop()
        parent = stack[-1][1]
        key = key.lower()
        if value.strip():
            parent[key] = value.strip()
            last = (parent, key)
        else:
            if len(stack) > MAX_DEPTH:
                raise ParseError('amd-smi text output nests keys more than {0} levels deep ({1!r}): this is not '
                                 'amd-smi output, or it was damaged.'.format(MAX_DEPTH, line[:60]))
            parent[key] = {}
            stack.append((indent, parent[key]))
            last = None
    return [(index, _convert_text(entry)) for index, entry in entries]


def _convert_text(data):
    converted = {}
    for key, value in data.items():
        if isinstance(value, dict):
            # The firmware blocks hold identifiers, kept as printed: IFWI VERSION 00154951 is no number, and
            # FW_VERSION 61.13.00.C is hex digits (parsers/firmware.py reads them).
            converted[key] = value if key in ('ifwi', 'vbios', 'fw_list') else _convert_text(value)
        else:
            converted[key] = _text_value(value) if isinstance(value, str) else value
    return converted


def _read_csv(text):
    try:
        rows = list(csv.reader(line for line in text.splitlines() if line.strip()))
    except csv.Error as exc:  # a field over csv's 128 KiB limit, a NUL byte, ...
        raise ParseError('amd-smi CSV output is damaged ({0}). Save the whole output of `amd-smi metric --csv` and '
                         'try again.'.format(exc))
    header = rows[0]
    entries = []
    for row in rows[1:]:
        if len(row) != len(header):
            raise ParseError('amd-smi CSV row has {0} fields, the header {1}: the output is cut short or '
                             'damaged.'.format(len(row), len(header)))
        values = dict(zip(header, row))
        entry = {'gpu': to_int(values['gpu'])}
        for column, path in _CSV_PATHS.items():
            if column not in values:
                continue
            keys, unit = path[:-1], path[-1]
            target = entry
            for key in keys[:-1]:
                target = target.setdefault(key, {})
            raw = values[column]
            number = to_float(raw)
            if unit and number is not None:
                target[keys[-1]] = {'value': number, 'unit': unit}
            else:
                target[keys[-1]] = int(number) if number is not None and number.is_integer() else raw
        if entry['gpu'] is None:
            raise ParseError('amd-smi CSV row without a gpu index: {0!r}'.format(row[:3]))
        entries.append((entry['gpu'], entry))
    return entries


def _table_rows(lines):
    """The rows of the GPU box of the default view: the lines after its '|====+====|' rule, up to the box of
    processes; each must be two cells between pipes. None when there is no GPU box."""
    rows = None
    for line in lines:
        line = line.rstrip()
        if rows is None:
            if _TABLE_RULE.match(line) and '=' in line and '+' in line[1:-1]:
                rows = []
            continue
        if 'Processes:' in line or (line.startswith('+') and '+' not in line[1:-1]):
            break  # '+------+' (no column break) opens the box of processes
        if not line.strip() or _TABLE_RULE.match(line):
            continue
        if not _TABLE_ROW.match(line):
            raise ParseError('amd-smi table row is not two cells between "|" ({0!r}): the output is cut short or '
                             'damaged. Save the whole output of `amd-smi` and try again.'.format(line[:80]))
        rows.append(line)
    return rows


def _partition_mode(cell):
    """{'compute_partition', 'memory_partition'} from 'SPX/NPS1' (either may be N/A); None for 'N/A', which
    the slash must not split into 'N' and 'A', or for anything else."""
    match = None if is_na(cell) else _PARTITION_MODE.match(cell)
    parts = [None if is_na(part) else part for part in match.groups()] if match else [None, None]
    if parts == [None, None]:
        return None
    return {'compute_partition': parts[0], 'memory_partition': parts[1]}


def _read_table(lines):
    """The amd-smi 26.x default view: two table rows per GPU in the box under '|===+===|'."""
    entries = []
    extra = {}
    for line in lines:
        head = _TABLE_HEAD.search(line)
        if head:
            extra.update(amdsmi_version=head.group(1), driver_version=head.group(2), rocm_version=head.group(3))
    rows = _table_rows(lines)
    if rows is None:
        return None, extra
    pending = None
    for line in rows:
        left, right = [cell.strip() for cell in _TABLE_ROW.match(line).groups()]
        first, _sep, name = left.partition(' ')
        bdf = normalize_bdf(first)
        if bdf:
            if pending is not None:
                raise ParseError('amd-smi table: GPU {0} has only its first row. The output is cut short or '
                                 'damaged.'.format(pending['bus']['bdf']))
            pending = {'bus': {'bdf': bdf}, 'asic': {'market_name': name.strip() or None}}
            temp = re.search(r'(\d+(?:\.\d+)?) °C', right)
            power = _TABLE_POWER.search(right)
            pending['temperature'] = {'hotspot': {'value': to_float(temp.group(1)), 'unit': 'C'}} if temp else {}
            if power and to_float(power.group(1)) is not None:
                pending['power'] = {'socket_power': {'value': to_float(power.group(1)), 'unit': 'W'}}
            if power and to_float(power.group(2)):
                pending['limit'] = {'socket_power': {'value': to_float(power.group(2)), 'unit': 'W'}}
            continue
        fields = left.split()
        index = to_int(fields[0]) if fields and fields[0].isdigit() else None
        if pending is None or index is None:
            raise ParseError('amd-smi table row {0!r} is neither a GPU\'s first row (BDF and name) nor its second '
                             '(GPU number first): the output is cut short or damaged.'.format(line[:80]))
        memory = re.search(r'(\d+)/(\d+) MB', right)
        gfx = re.match(r'^(\d+(?:\.\d+)?) %', right)
        pending['usage'] = {'gfx_activity': {'value': to_float(gfx.group(1)), 'unit': '%'}} if gfx else {}
        if memory:
            pending['mem_usage'] = {'used_vram': {'value': to_int(memory.group(1)), 'unit': 'MB'},
                                    'total_vram': {'value': to_int(memory.group(2)), 'unit': 'MB'}}
        partition = _partition_mode(fields[3]) if len(fields) >= 4 else None
        if partition:
            pending['partition'] = partition
        entries.append((index, pending))
        pending = None
    if pending is not None:
        raise ParseError('amd-smi table ends after the first row of GPU {0}: the output is cut short. Save the '
                         'whole output of `amd-smi` and try again.'.format(pending['bus']['bdf']))
    return entries, extra


def _read_monitor(lines):
    """`amd-smi monitor`: a header of column names, then one row per GPU (newer amd-smi prints one per XCP, with an
    XCP column: the GPU's first, XCP 0, is kept), cells apart by two or more spaces ('182 W', '42 °C', '2.9/ 15.9 GB';
    GTT_USAGE, an APU's column in its place, is not VRAM and is not read)."""
    lines = [line for line in lines if line.strip()]
    columns = re.split(r'\s{2,}', lines[0].strip())
    entries = []
    for line in lines[1:]:
        cells = re.split(r'\s{2,}', line.strip())
        if len(cells) != len(columns) or to_int(cells[0]) is None:
            raise ParseError('amd-smi monitor row {0!r} does not have the header\'s {1} columns: the output is cut '
                             'short or damaged.'.format(line[:80], len(columns)))
        values = dict(zip(columns, cells))
        if to_int(values.get('XCP', '0')) not in (0, None):
            continue
        entry = {'gpu': to_int(cells[0])}
        for column, path in _MONITOR_PATHS.items():
            if column in values:
                target = entry
                for key in path[:-1]:
                    target = target.setdefault(key, {})
                target[path[-1]] = _text_value(values[column])
        usage = re.match(r'^(\d+(?:\.\d+)?)/\s*(\d+(?:\.\d+)?) (\S+)$', values.get('VRAM_USAGE', ''))
        if usage:
            entry['mem_usage'] = {'used_vram': {'value': to_float(usage.group(1)), 'unit': usage.group(3)},
                                  'total_vram': {'value': to_float(usage.group(2)), 'unit': usage.group(3)}}
        entries.append((entry['gpu'], entry))
    return entries


def _read(text):
    """(form, [(index, nested dict)], extra) for one amd-smi output."""
    stripped = text.strip()
    lines = text.splitlines()
    json_at = find_json_start(text)
    if stripped.startswith('gpu,'):
        return 'csv', _read_csv(stripped), {}
    if _MONITOR_HEAD.match(stripped.splitlines()[0] if stripped else ''):
        return 'monitor', _read_monitor(lines), {}
    if _TABLE_HEAD.search(text):
        entries, extra = _read_table(lines)
        if entries is None:
            if diagnose(text):
                return None, [], {}
            raise ParseError('amd-smi table has its header but no GPU rows (no "|====+====|" line): the output is '
                             'cut short. Save the whole output of `amd-smi` and try again.')
        return 'table', entries, extra
    banner = _BANNER.search(text)
    if banner and 'usage: amd-smi' in text:
        raise ParseError(USAGE.format(banner.group(1)))
    first = next((number for number, line in enumerate(lines) if _GPU_HEADER.match(line)), None)
    header_at = _GPU_HEADER_IN_TEXT.search(text)
    # Whichever starts first: a "GPU: N" block whose values hold '[' lines is text, not JSON.
    if json_at >= 0 and (header_at is None or json_at < header_at.start()):
        return _read_json(text, json_at)
    if first is not None:
        return 'text', _read_text(lines[first:]), {}
    return None, [], {}


def read_entries(text):
    """[(gpu index, the object amd-smi printed for it)] from one output of any command in any form (JSON, "GPU: N"
    text, CSV, table): what the health check reads from `metric --json` and `bad-pages`. A known no-GPU message
    gives []; text that is no amd-smi output raises ParseError."""
    text = strip_ansi(text).replace('\r\n', '\n')
    form, entries, _extra = _read(text)
    if form is None and not diagnose(text):
        raise ParseError('this is not amd-smi output: no JSON, CSV, "GPU: N" blocks or table, and no known error '
                         'message.')
    return entries


# --- normalisation: one flat record per GPU, the same keys as rocm_smi's --------------------------------------

def _section(data, *path):
    """The object at path; {} when it is missing, N/A, or not an object (a string or list where amd-smi prints
    an object is no value, like N/A)."""
    for key in path:
        data = data.get(key) if isinstance(data, dict) else None
    return data if isinstance(data, dict) else {}


def _value(data, *path):
    """The value at path, unwrapping {'value', 'unit'}; None for N/A or missing."""
    for key in path:
        if not isinstance(data, dict):
            return None
        data = data.get(key)
    if isinstance(data, dict) and 'value' in data:
        data = data['value']
    return None if is_na(data) or isinstance(data, (dict, list)) else data


def _bytes(data, *path):
    """Bytes from {'value': N, 'unit': 'MB'} or a bare N (MB); None for a unit that is not a size unit."""
    number = to_float(_value(data, *path))
    if number is None:
        return None
    unit = _section(data, *path).get('unit')
    unit = 'MB' if unit is None or unit == '' else unit
    scale = _BYTE_UNITS.get(unit.strip().upper()) if isinstance(unit, str) else None
    return None if scale is None else to_int(int(number * scale))


def _unique_id_from_uuid(uuid):
    """amdsmi_uuid_gen() writes the unique id's top byte, 0xff, the device id, then the other 7 bytes:
    '67ff740f-0000-1000-80c6-3ac3c3c637f9' -> '0x67c63ac3c3c637f9'. All zero means it was not readable."""
    match = _UUID.match(str(uuid or '').lower())
    if not match:
        return None
    unique = match.group(1) + match.group(2) + match.group(3)
    return None if int(unique, 16) == 0 else '0x' + unique


def _firmware(data):
    """The GPU's firmware block, NAME, BUILD_DATE, PART_NUMBER and VERSION: IFWI from ROCm 7.1 (`amd-smi static
    --ifwi`, `--vbios` kept as its alias), VBIOS before. amd-smi 27.1 (ROCm 10.1) adds BOOT_FIRMWARE to it: the legacy
    VBIOS version number, the Unified BootLoader version (amd-smi's changelog, 7.1.0 and 10.1.0)."""
    return _section(data, 'ifwi') or _section(data, 'vbios')


def _gpu(index, data):
    asic = _section(data, 'asic')
    uuid = _value(data, 'uuid')
    # `amd-smi list` gives no device id, but its UUID carries it ('67ff740f-...' is device 0x740f).
    from_uuid = _UUID.match(str(uuid or '').lower())
    device_id = hex_id(_value(asic, 'device_id')) or (hex_id(from_uuid.group(0)[4:8]) if from_uuid else None)
    known = lookup(VENDOR_AMD, device_id)
    serial = _value(asic, 'asic_serial')
    temps = {}
    for sensor in _section(data, 'temperature'):
        number = to_float(_value(data, 'temperature', sensor))
        if number is not None:
            temps[sensor] = number
    gfx_target = normalize_gfx_name(_value(asic, 'target_graphics_version')) or known['gfx_target']
    firmware = _firmware(data)
    partition = _section(data, 'partition')
    compute, memory = _value(partition, 'compute_partition'), _value(partition, 'memory_partition')
    gpu = {
        'index': index, 'card': None, 'device_id': device_id, 'device_rev': hex_id(_value(asic, 'rev_id'), 2),
        'subsystem_id': hex_id(_value(asic, 'subsystem_id')), 'subvendor_id': hex_id(_value(asic, 'subvendor_id')),
        'product_name': _value(asic, 'market_name') or _value(data, 'board', 'product_name'),
        'series': None, 'model': _value(data, 'board', 'model_number'), 'vendor': _value(asic, 'vendor_name'),
        'sku': None,
        'unique_id': hex_id(serial, 16) if serial else _unique_id_from_uuid(uuid),
        'uuid': uuid, 'uuid_placeholder': (_unique_id_from_uuid(uuid) is None) if uuid else None,
        'vbios': _value(firmware, 'part_number'), 'vbios_version': _value(firmware, 'version'),
        'boot_firmware': _value(firmware, 'boot_firmware'),
        'node_id': to_int(_value(data, 'node_id')), 'kfd_id': to_int(_value(data, 'kfd_id')),
        'partition_id': to_int(_value(data, 'partition_id')),
        'gfx_target': gfx_target, 'compute_units': to_int(_value(asic, 'num_compute_units')),
        'sriov_vf': known['vf'],
        'vram_total_bytes': _bytes(data, 'mem_usage', 'total_vram') or _bytes(data, 'vram', 'size'),
        'vram_used_bytes': _bytes(data, 'mem_usage', 'used_vram'),
        'vram_use_percent': None,
        'vram_type': _value(data, 'vram', 'type'), 'vram_vendor': _value(data, 'vram', 'vendor'),
        'temperature_c': temps.get('edge', temps.get('hotspot')), 'temperatures_c': temps,
        'power_w': to_float(_value(data, 'power', 'socket_power')),
        'power_cap_w': to_float(_value(data, 'limit', 'socket_power')),
        'max_power_w': to_float(_value(data, 'limit', 'max_power')),
        'sclk_mhz': to_float(_value(data, 'clock', 'gfx_0', 'clk')),
        'mclk_mhz': to_float(_value(data, 'clock', 'mem_0', 'clk')),
        'use_percent': to_float(_value(data, 'usage', 'gfx_activity')),
        'fan_percent': to_float(_value(data, 'fan', 'usage')),
        'perf_level': _value(data, 'perf_level'),
        'pcie_bus': normalize_bdf(_value(data, 'bus', 'bdf') or _value(data, 'bdf')),
        'link_speed_gts': to_float(_value(data, 'pcie', 'speed')),
        'link_width': to_int(_value(data, 'pcie', 'width')),
        'max_link_speed_gts': to_float(_value(data, 'bus', 'max_pcie_speed')),
        'max_link_width': to_int(_value(data, 'bus', 'max_pcie_width')),
        'numa_node': to_int(_value(data, 'numa', 'node')),
        'partitions': {'compute': compute, 'memory': memory} if (compute or memory) else None,
        'driver_version': _value(data, 'driver', 'version'),
        'firmware': fw.from_amd_smi(data.get('fw_list')),
    }
    if gpu['vram_total_bytes'] and gpu['vram_used_bytes'] is not None:
        gpu['vram_use_percent'] = round(100.0 * gpu['vram_used_bytes'] / gpu['vram_total_bytes'], 1)
    return gpu


def parse_amd_smi(*texts):
    """Facts from one or more amd-smi outputs (static, metric, list, ... in any supported form), merged per GPU.

    Known no-GPU messages give gpu_count 0 with error/error_kind; text that is no amd-smi output raises
    ParseError.
    """
    result = {'forms': [], 'kinds': [], 'amdsmi_version': None, 'rocm_version': None, 'driver_version': None,
              'gpus': [], 'gpu_count': 0, 'error': None, 'error_kind': None, 'detail': []}
    merged = {}
    for text in texts:
        if not isinstance(text, str):
            raise ParseError('amd-smi output must be text, got {0}'.format(type(text).__name__))
        text = strip_ansi(text).replace('\r\n', '\n')
        form, entries, extra = _read(text)
        if form is None:
            found = diagnose(text)
            if not found:
                raise ParseError('this is not amd-smi output: no JSON, CSV, "GPU: N" blocks or table, and no known '
                                 'error message. Give the output of `amd-smi static --json`.')
            if result['error_kind'] is None:
                result['error_kind'], result['error'] = found
                result['detail'] = [line.strip() for line in text.splitlines() if line.strip()][:6]
            continue
        result['forms'].append(form)
        for key, value in extra.items():
            result[key] = result[key] or value
        for index, entry in entries:
            kind = {'table': 'default', 'monitor': 'monitor'}.get(form) or _kind(entry)
            if kind and kind not in result['kinds']:
                result['kinds'].append(kind)
            _merge(merged.setdefault(index, {}), entry)
    result['gpus'] = [_gpu(index, merged[index]) for index in sorted(merged)]
    result['gpu_count'] = len(result['gpus'])
    versions = [gpu['driver_version'] for gpu in result['gpus'] if gpu['driver_version']]
    result['driver_version'] = result['driver_version'] or (versions[0] if versions else None)
    if result['gpus']:
        result['error'], result['error_kind'], result['detail'] = None, None, []
    elif result['error_kind'] is None:
        result['error_kind'], result['error'] = 'no_gpu', NO_GPU
    return result
