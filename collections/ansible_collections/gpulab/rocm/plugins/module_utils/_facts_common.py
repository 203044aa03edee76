# -*- coding: utf-8 -*-
# Copyright: gpulab.rocm contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Small pure helpers shared by the GPU facts parsers (no AnsibleModule here).

The parsers raise ParseError (a ValueError) for input they cannot read; the modules turn it into a failed
result with the message. Everything else returns plain data: dicts, lists, str, int, float, bool, None.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re


class ParseError(ValueError):
    """The input is not a form the parser knows, or it was cut short. The message says which and what to do."""


# What to do when a GPU device node is not accessible; every facts module says it the same way.
PERMISSION_HINT = (
    'add the user to the render and video groups (role rocm_access) and start a new login session: group '
    'membership only applies to processes of a new login'
)

# Ways the tools spell "no value" (fixtures NOTES.md, "Unsupported is spelled many ways").
_NA = frozenset([
    '', 'n/a', 'na', 'none', 'unsupported', 'unknown', 'not supported', 'not available', '-1',
    '4294967295', '18446744073709551615',
])

_ANSI_RE = re.compile(r'\x1b\[[0-9;?]*[A-Za-z]')
_NUM_RE = re.compile(r'[-+]?\d+(?:\.\d+)?')
_BDF_RE = re.compile(r'^(?:([0-9a-fA-F]{4,8}):)?([0-9a-fA-F]{2}):([0-9a-fA-F]{2})\.([0-7])$')


def strip_ansi(text):
    """rocminfo colours its error lines (ESC[31m ... ESC[0m) even when stdout is not a terminal."""
    return _ANSI_RE.sub('', text) if '\x1b' in text else text


def is_na(value):
    if value is None:
        return True
    if isinstance(value, str):
        return value.strip().lower() in _NA
    return False


def to_int(value, base=10):
    """An int from 42, '42', ' 42 ', '0x2a' (base 16 implied) or '42(0x2a)'; None for N/A or junk."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        return int(value) if value == value and abs(value) != float('inf') else None
    text = str(value).strip()
    if is_na(text):
        return None
    if '(' in text:
        text = text.split('(', 1)[0].strip()
    try:
        if text.lower().startswith('0x'):
            return int(text, 16)
        return int(text, base)
    except ValueError:
        return None


def to_float(value):
    """The first number in '28.0°C', '13.0W', '(1725Mhz)', 55 or 'N/A' (None)."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, (int, float)):
        return float(value) if value == value and abs(value) != float('inf') else None
    text = str(value)
    if is_na(text):
        return None
    match = _NUM_RE.search(text)
    if not match:
        return None
    return float(match.group(0))


def hex_id(value, width=4):
    """'0x740f' from 29711, '0x740F', '740f' or '29711(0x740f)'; None for N/A or junk."""
    if value is None or isinstance(value, bool):
        return None
    if isinstance(value, int):
        number = value
    else:
        text = str(value).strip()
        if is_na(text):
            return None
        if '(0x' in text:
            text = text.split('(0x', 1)[1].rstrip(')')
            number = _int_or_none(text, 16)
        elif text.lower().startswith('0x'):
            number = _int_or_none(text[2:], 16)
        elif re.match(r'^[0-9a-fA-F]+$', text):
            number = _int_or_none(text, 16)
        else:
            number = None
    if number is None or number < 0:
        return None
    return '0x{0:0{1}x}'.format(number, width)


def _int_or_none(text, base):
    try:
        return int(text, base)
    except ValueError:
        return None


def bdf_from_location(location_id, domain=0):
    """PCI address from rocminfo BDFID / KFD location_id (bus<<8 | dev<<3 | fn): 1280 -> '0000:05:00.0'."""
    location_id = to_int(location_id)
    if location_id is None or location_id <= 0 or location_id > 0xffff:
        return None
    domain = to_int(domain) or 0
    bus, device, function = location_id >> 8, (location_id >> 3) & 0x1f, location_id & 0x7
    return '{0:04x}:{1:02x}:{2:02x}.{3:x}'.format(domain, bus, device, function)


def normalize_bdf(value):
    """'0000:0b:00.0' (lower case, with domain) from '0000:0B:00.0' or '0b:00.0'; None when it is no address."""
    if not isinstance(value, str):
        return None
    match = _BDF_RE.match(value.strip())
    if not match:
        return None
    domain = match.group(1) or '0000'
    return '{0}:{1}:{2}.{3}'.format(domain.lower(), match.group(2).lower(), match.group(3).lower(),
                                    match.group(4))


def find_json_start(text):
    """Index of the JSON document in output that may start with warnings, or -1.

    rocm-smi prints 'WARNING: No AMD GPUs specified' before its JSON on the same stream, and amd-smi can print
    Python SyntaxWarnings first, so the document starts at the first line that begins with '{' or '['.
    """
    stripped = text.lstrip()
    if stripped[:1] in ('{', '['):
        return len(text) - len(stripped)
    for match in re.finditer(r'^[ \t]*[\[{]', text, re.M):
        return match.end() - 1
    return -1


def first_line_matching(text, pattern):
    match = re.search(pattern, text, re.M)
    return match.group(0).strip() if match else None


# --- shared by the facts modules (plain data in, plain data out; the modules do the AnsibleModule calls) -----

TOOL_DIRS = ['/opt/rocm/bin']


def missing_tool(tool, package):
    """The `error` of a host without the tool: not a failure, `present` is false."""
    return ('{0} was not found in PATH or /opt/rocm/bin: install the {1} package (role rocm_sdk) or point '
            '`executable` at it.'.format(tool, package))


def read_src(path):
    """Text of a saved tool output; IOError/OSError propagate with the path in the message."""
    with open(path, 'rb') as handle:
        data = handle.read()
    return data.decode('utf-8', 'replace')


def combined(stdout, stderr):
    """stdout, then stderr: the tools print their error messages on either stream."""
    stdout, stderr = stdout or '', stderr or ''
    return stdout + ('\n' + stderr if stderr.strip() else '')
